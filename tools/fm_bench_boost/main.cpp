// fm_bench_boost/main.cpp: fm-bench's churn, bulk and regrowth experiments
// with Boost.Pool (header-only, libboost-dev) and std::shared_ptr.
//
//   fm-bench-boost [--quick] [--repeat N] [--only churn|bulk|regrowth]
//   fm-bench-boost --peer churn|bulk|regrowth|info [--quick]
//
// Alone it prints markdown tables in fm-bench's format, with a glibc
// malloc/free row measured in the same run as the baseline. With --peer it
// runs one round and prints fm-bench's peer rows (see fm_bench/peers.h), so
// fm-bench puts these rows in its own tables, beside its glibc baseline.
//
// Variants: boost::pool<> (malloc/free), boost::object_pool (construct/
// destroy), boost::pool_allocator and boost::fast_pool_allocator, each with
// Boost's default mutex (std::mutex) and with details::pool::null_mutex,
// std::make_shared and std::allocate_shared with fast_pool_allocator (both
// mutexes). The loops are fm-bench's (alloc_loops.h): one byte written per
// item, an asm barrier on each pointer, the same seed for the random order.
#include <boost/pool/object_pool.hpp>
#include <boost/pool/pool.hpp>
#include <boost/pool/pool_alloc.hpp>

#include <malloc.h> // malloc_trim

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "bench.h"
}
#include "framemem/clock.h"

namespace {

constexpr uint32_t churn_live = 10000;
constexpr uint32_t bulk_items = 5000000, bulk_quick = 200000;
constexpr size_t bulk_item = 128, regrow_item = 1024;

template <size_t N> struct item {
    unsigned char b[N];
};

using null_mutex = boost::details::pool::null_mutex;
using default_mutex = boost::details::pool::default_mutex;

// ---------------------------------------------------------------- policies
// Each policy: handle type H, H alloc(), void release(H &), unsigned char
// *bytes(H), void release_all(items, n) (every item at once), static name.
// release_all frees one by one in allocation order, except where the free
// keeps the free list in address order (object_pool::destroy and
// pool_allocator::deallocate call ordered_free, a walk of the list per free:
// 5,000,000 of them take hours); those release everything the way Boost
// means it: object_pool's destructor (destroys every live object, frees the
// blocks) and singleton_pool::purge_memory.

// One by one, in allocation order.
template <class P, class H> void release_each(P &pol, std::vector<H> &items, size_t n) {
    for (size_t i = 0; i < n; i++) pol.release(items[i]);
}

template <class T> struct malloc_policy {
    using H = T *;
    static constexpr const char *name = "malloc/free (glibc, in fm-bench-boost)";
    H alloc() { return static_cast<T *>(std::malloc(sizeof(T))); }
    void release(H &p) { std::free(p); }
    void release_all(std::vector<H> &items, size_t n) { release_each(*this, items, n); }
    static unsigned char *bytes(const H &p) { return p->b; }
};

template <class T> struct pool_policy {
    using H = T *;
    static constexpr const char *name = "boost::pool<> malloc/free";
    boost::pool<> pool{sizeof(T)};
    H alloc() { return static_cast<T *>(pool.malloc()); }
    void release(H &p) { pool.free(p); }
    void release_all(std::vector<H> &items, size_t n) { release_each(*this, items, n); }
    static unsigned char *bytes(const H &p) { return p->b; }
};

template <class T> struct object_pool_policy {
    using H = T *;
    static constexpr const char *name = "boost::object_pool construct/destroy";
    std::unique_ptr<boost::object_pool<T>> pool{new boost::object_pool<T>};
    H alloc() { return pool->construct(); }
    void release(H &p) { pool->destroy(p); }
    void release_all(std::vector<H> &, size_t) { pool.reset(new boost::object_pool<T>); }
    static unsigned char *bytes(const H &p) { return p->b; }
};

template <class T, class Alloc> struct allocator_policy {
    using H = T *;
    Alloc a;
    H alloc() { return a.allocate(1); }
    void release(H &p) { a.deallocate(p, 1); }
    void release_all(std::vector<H> &items, size_t n) { release_each(*this, items, n); }
    static unsigned char *bytes(const H &p) { return p->b; }
};

template <class T, class M>
using pool_alloc_t = boost::pool_allocator<T, boost::default_user_allocator_new_delete, M, 32, 0>;
template <class T, class M>
using fast_alloc_t =
    boost::fast_pool_allocator<T, boost::default_user_allocator_new_delete, M, 32, 0>;

// pool_allocator's storage: the singleton_pool it allocates from.
template <class T, class M>
using pool_alloc_store = boost::singleton_pool<boost::pool_allocator_tag, sizeof(T),
                                               boost::default_user_allocator_new_delete, M, 32, 0>;
template <class T, class M> struct pool_alloc_policy : allocator_policy<T, pool_alloc_t<T, M>> {
    void release_all(std::vector<T *> &, size_t) { pool_alloc_store<T, M>::purge_memory(); }
};
template <class T> struct pool_alloc_mutex : pool_alloc_policy<T, default_mutex> {
    static constexpr const char *name = "boost::pool_allocator, default mutex";
};
template <class T> struct pool_alloc_null : pool_alloc_policy<T, null_mutex> {
    static constexpr const char *name = "boost::pool_allocator, null_mutex";
};
template <class T> struct fast_alloc_mutex : allocator_policy<T, fast_alloc_t<T, default_mutex>> {
    static constexpr const char *name = "boost::fast_pool_allocator, default mutex";
};
template <class T> struct fast_alloc_null : allocator_policy<T, fast_alloc_t<T, null_mutex>> {
    static constexpr const char *name = "boost::fast_pool_allocator, null_mutex";
};

template <class T> struct make_shared_policy {
    using H = std::shared_ptr<T>;
    static constexpr const char *name = "std::make_shared";
    H alloc() { return std::make_shared<T>(); }
    void release(H &p) { p.reset(); }
    void release_all(std::vector<H> &items, size_t n) { release_each(*this, items, n); }
    static unsigned char *bytes(const H &p) { return p->b; }
};

template <class T, class M> struct allocate_shared_policy {
    using H = std::shared_ptr<T>;
    fast_alloc_t<T, M> a;
    H alloc() { return std::allocate_shared<T>(a); }
    void release(H &p) { p.reset(); }
    void release_all(std::vector<H> &items, size_t n) { release_each(*this, items, n); }
    static unsigned char *bytes(const H &p) { return p->b; }
};
template <class T> struct alloc_shared_mutex : allocate_shared_policy<T, default_mutex> {
    static constexpr const char *name = "std::allocate_shared, fast_pool_allocator, default mutex";
};
template <class T> struct alloc_shared_null : allocate_shared_policy<T, null_mutex> {
    static constexpr const char *name = "std::allocate_shared, fast_pool_allocator, null_mutex";
};

template <class H> void keep(H &h, unsigned char *b, uint32_t i) {
    if (!b) bench_die("an allocation returned NULL");
    b[0] = static_cast<unsigned char>(i);
    BENCH_ESCAPE(b);
    (void)h;
}

// ------------------------------------------------------------ experiments

struct row {
    std::string variant, key;
    std::vector<double> v;
};

template <class P> BENCH_NOINLINE uint64_t timed_pairs(P &pol, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        typename P::H h = pol.alloc();
        keep(h, P::bytes(h), i);
        pol.release(h);
    }
    return fm_clock_now() - t0;
}

template <class P>
BENCH_NOINLINE uint64_t timed_random(P &pol, std::vector<typename P::H> &live, const uint32_t *idx,
                                     uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = idx[i];
        pol.release(live[j]);
        live[j] = pol.alloc();
        keep(live[j], P::bytes(live[j]), i);
    }
    return fm_clock_now() - t0;
}

template <template <class> class Pol, size_t N>
void churn_one(bool random, uint32_t n, const uint32_t *idx, std::vector<row> &out) {
    using P = Pol<item<N>>;
    uint32_t warm = n / 100 < 1000 ? 1000 : n / 100;
    if (warm > n) warm = n;
    P pol;
    uint64_t ticks;
    if (random) {
        std::vector<typename P::H> live(churn_live);
        for (uint32_t j = 0; j < churn_live; j++) {
            live[j] = pol.alloc();
            keep(live[j], P::bytes(live[j]), j);
        }
        timed_random(pol, live, idx, warm);
        ticks = timed_random(pol, live, idx, n);
        pol.release_all(live, churn_live);
    } else {
        timed_pairs(pol, warm);
        ticks = timed_pairs(pol, n);
    }
    out.push_back({P::name, std::to_string(N) + (random ? " random" : " pairs"),
                   {static_cast<double>(fm_clock_to_ns(ticks)) / n}});
}

template <template <class> class Pol>
void churn_groups(uint32_t n, const uint32_t *idx, std::vector<row> &out) {
    for (int random = 0; random < 2; random++) {
        churn_one<Pol, 16>(random, n, idx, out);
        churn_one<Pol, 1024>(random, n, idx, out);
    }
}

template <template <class> class Pol> void bulk_one(uint32_t n, std::vector<row> &out) {
    using P = Pol<item<bulk_item>>;
    std::vector<typename P::H> items(n);
    uint64_t rss0, rss1, ta, tf;
    malloc_trim(0); // no variant inherits free pages an earlier one left
    {
        P pol;
        rss0 = bench_rss_bytes();
        uint64_t t0 = fm_clock_now();
        for (uint32_t i = 0; i < n; i++) {
            items[i] = pol.alloc();
            keep(items[i], P::bytes(items[i]), i);
        }
        ta = fm_clock_now() - t0;
        rss1 = bench_rss_bytes();
        t0 = fm_clock_now();
        pol.release_all(items, n);
        tf = fm_clock_now() - t0;
    }
    out.push_back({P::name, "128",
                   {static_cast<double>(fm_clock_to_ns(ta)) / n,
                    static_cast<double>(fm_clock_to_ns(tf)) / n,
                    static_cast<double>(rss1 > rss0 ? rss1 - rss0 : 0)}});
}

template <template <class> class Pol> void regrowth_one(uint32_t n, std::vector<row> &out) {
    using P = Pol<item<regrow_item>>;
    std::vector<uint64_t> ns(n);
    std::vector<typename P::H> items(n);
    uint64_t faults;
    malloc_trim(0);
    {
        P pol;
        faults = bench_minor_faults();
        for (uint32_t i = 0; i < n; i++) {
            uint64_t t0 = fm_clock_now();
            items[i] = pol.alloc();
            unsigned char *b = P::bytes(items[i]);
            if (b) std::memset(b, 0, regrow_item);
            BENCH_ESCAPE(b);
            uint64_t t1 = fm_clock_now();
            if (!b) bench_die("regrowth: %s returned NULL", P::name);
            ns[i] = fm_clock_to_ns(t1 - t0);
        }
        faults = bench_minor_faults() - faults;
        pol.release_all(items, n);
    }
    bench_latency lat = bench_latency_of(ns.data(), n);
    out.push_back({P::name, "1024",
                   {double(lat.median), double(lat.p99), double(lat.p999), double(lat.max),
                    double(lat.over_20x_median), double(lat.over_1us), double(faults)}});
}

// One round of an experiment; with_malloc adds the glibc baseline (alone).
void round(const std::string &what, bool quick, bool with_malloc, std::vector<row> &out) {
    if (what == "churn") {
        uint32_t n = quick ? 100000 : 1000000;
        std::vector<uint32_t> idx(n);
        uint64_t rng = 0x9E3779B97F4A7C15ull; // churn.c's seed: the same order
        for (auto &x : idx) x = static_cast<uint32_t>(bench_xorshift64(&rng) % churn_live);
        if (with_malloc) churn_groups<malloc_policy>(n, idx.data(), out);
        churn_groups<pool_policy>(n, idx.data(), out);
        churn_groups<object_pool_policy>(n, idx.data(), out);
        churn_groups<pool_alloc_mutex>(n, idx.data(), out);
        churn_groups<pool_alloc_null>(n, idx.data(), out);
        churn_groups<fast_alloc_mutex>(n, idx.data(), out);
        churn_groups<fast_alloc_null>(n, idx.data(), out);
        churn_groups<make_shared_policy>(n, idx.data(), out);
        churn_groups<alloc_shared_mutex>(n, idx.data(), out);
        churn_groups<alloc_shared_null>(n, idx.data(), out);
    } else if (what == "bulk") {
        uint32_t n = quick ? bulk_quick : bulk_items;
        if (with_malloc) bulk_one<malloc_policy>(n, out);
        bulk_one<pool_policy>(n, out);
        bulk_one<object_pool_policy>(n, out);
        bulk_one<pool_alloc_mutex>(n, out);
        bulk_one<pool_alloc_null>(n, out);
        bulk_one<fast_alloc_mutex>(n, out);
        bulk_one<fast_alloc_null>(n, out);
        bulk_one<make_shared_policy>(n, out);
        bulk_one<alloc_shared_mutex>(n, out);
        bulk_one<alloc_shared_null>(n, out);
    } else if (what == "regrowth") {
        uint32_t n = quick ? 20000 : 100000;
        if (with_malloc) regrowth_one<malloc_policy>(n, out);
        regrowth_one<pool_policy>(n, out);
        regrowth_one<object_pool_policy>(n, out);
        regrowth_one<fast_alloc_null>(n, out);
    } else {
        std::fprintf(stderr, "fm-bench-boost: no experiment '%s' (churn, bulk, regrowth)\n",
                     what.c_str());
        std::exit(2);
    }
}

// ------------------------------------------------------- standalone tables

struct series {
    std::string variant, key;
    std::vector<std::vector<double>> rounds;
    double med(size_t i, double *lo = nullptr, double *hi = nullptr) const {
        std::vector<double> c;
        for (const auto &r : rounds) c.push_back(r[i]);
        double m = bench_median(c.data(), c.size()); // sorts c
        if (lo) *lo = c.front();
        if (hi) *hi = c.back();
        return m;
    }
};

const series *find(const std::vector<series> &s, const std::string &variant,
                   const std::string &key) {
    for (const auto &x : s)
        if (x.variant == variant && x.key == key) return &x;
    return nullptr;
}

const char *malloc_name = malloc_policy<item<1>>::name;

void print_churn(const std::vector<series> &s, uint32_t n, int repeat) {
    std::printf("\n## churn (fm-bench-boost)\n\n%u operations per run, median of %d runs, "
                "variants interleaved run by run; fm-bench's loops and seed. Ratio = variant "
                "time / malloc time (same item, same pattern).\n\n",
                n, repeat);
    std::printf("| variant | item | pattern | ns/pair | min | max | ratio vs malloc |\n");
    std::printf("|---|---:|---|---:|---:|---:|---:|\n");
    for (const char *pat : {"pairs", "random"})
        for (int size : {16, 1024}) {
            std::string key = std::to_string(size) + " " + pat;
            const series *base = find(s, malloc_name, key);
            for (const auto &x : s) {
                if (x.key != key) continue;
                double lo, hi, m = x.med(0, &lo, &hi);
                std::printf("| %s | %d B | %s | %.2f | %.2f | %.2f | %.2f |\n", x.variant.c_str(),
                            size,
                            std::strcmp(pat, "pairs") ? "random free, 10,000 live"
                                                      : "alloc+free pairs",
                            m, lo, hi, base ? m / base->med(0) : 0.0);
            }
        }
}

void print_bulk(const std::vector<series> &s, uint32_t n, int repeat) {
    std::printf("\n## bulk (fm-bench-boost)\n\n%u items of %zu bytes allocated and held, then "
                "all freed in allocation order, except object_pool (freed by its destructor, "
                "which destroys every live object) and pool_allocator (by "
                "singleton_pool::purge_memory): their frees keep the free list in address "
                "order, a list walk per free, hours for 5,000,000; make_shared, allocate_shared and "
                "object_pool value-initialise (zero) each item, as their API does; median of %d runs. RSS = "
                "growth of the resident set while all are held; overhead = RSS / items - "
                "%zu. Ratio = (alloc + free) / glibc's.\n\n",
                n, bulk_item, repeat, bulk_item);
    std::printf("| variant | alloc ns/item | free ns/item | ratio vs glibc | RSS MiB | overhead "
                "B/item |\n|---|---:|---:|---:|---:|---:|\n");
    const series *base = find(s, malloc_name, "128");
    double bp = base ? base->med(0) + base->med(1) : 0.0;
    for (const auto &x : s) {
        double a = x.med(0), f = x.med(1), rss = x.med(2);
        std::printf("| %s | %.2f | %.2f | %.2f | %.1f | %.1f |\n", x.variant.c_str(), a, f,
                    bp > 0 ? (a + f) / bp : 0.0, rss / (1024.0 * 1024.0),
                    rss / n - double(bulk_item));
    }
}

void print_regrowth(const std::vector<series> &s, uint32_t n, int repeat) {
    std::printf("\n## regrowth (fm-bench-boost)\n\n%u allocations of a %zu-byte item, each "
                "zeroed (memset) right after allocation, alloc+memset timed one by one; "
                "median of %d runs. Columns as fm-bench's regrowth table; create, reserve and "
                "growth do not apply.\n\n",
                n, regrow_item, repeat);
    std::printf("| variant | create µs | reserve µs | median ns | p99 ns | p99.9 ns | max ns |%s "
                ">20x median | >1 µs | growth µs | grow events | slowest growth µs | faults |\n",
                repeat > 1 ? " worst max ns |" : "");
    std::printf("|---|---:|---:|---:|---:|---:|---:|%s---:|---:|---:|---:|---:|---:|\n",
                repeat > 1 ? "---:|" : "");
    for (const auto &x : s) {
        double lo, worst;
        double mx = x.med(3, &lo, &worst);
        std::printf("| %s | - | - | %.0f | %.0f | %.0f | %.0f |", x.variant.c_str(), x.med(0),
                    x.med(1), x.med(2), mx);
        if (repeat > 1) std::printf(" %.0f |", worst);
        std::printf(" %.0f | %.0f | - | - | - | %.0f |\n", x.med(4), x.med(5), x.med(6));
    }
}

int usage(int code) {
    std::fprintf(code ? stderr : stdout,
                 "usage: fm-bench-boost [--quick] [--repeat N] [--only churn|bulk|regrowth]\n"
                 "       fm-bench-boost --peer churn|bulk|regrowth|info [--quick]  (fm-bench)\n");
    return code;
}

} // namespace

int main(int argc, char **argv) {
    std::string peer, only;
    bool quick = false;
    int repeat = 0;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--peer" && next) {
            peer = next;
            i++;
        } else if (a == "--only" && next) {
            only = next;
            i++;
        } else if (a == "--quick") {
            quick = true;
        } else if (a == "--repeat" && next) {
            char *end = nullptr;
            long v = std::strtol(next, &end, 10);
            if (*end || v < 1 || v > 1000) {
                std::fprintf(stderr, "fm-bench-boost: --repeat needs a whole number from 1 to "
                                     "1000\n");
                return 2;
            }
            repeat = static_cast<int>(v);
            i++;
        } else if (a == "--help" || a == "-h") {
            return usage(0);
        } else {
            std::fprintf(stderr, "fm-bench-boost: unknown or incomplete option '%s'\n",
                         a.c_str());
            return usage(2);
        }
    }
    fm_clock_init();

    if (!peer.empty()) {
        if (peer == "info") {
            std::printf("info\tBoost %d.%d.%d Boost.Pool (header-only) and std::shared_ptr, "
                        "malloc not replaced\t%s\n",
                        BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100,
                        bench_malloc_library());
            return 0;
        }
        std::vector<row> rows;
        round(peer, quick, false, rows);
        for (const auto &r : rows) {
            std::printf("row\t%s\t%s", r.variant.c_str(), r.key.c_str());
            for (double v : r.v) std::printf("\t%.6g", v);
            std::printf("\n");
        }
        return 0;
    }

    if (!repeat) repeat = quick ? 1 : 5;
    std::printf("# fm-bench-boost\n\n- Boost %d.%d.%d, %s\n- malloc comes from %s\n- mode: %s, "
                "--repeat %d\n",
                BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100,
                "g++ " __VERSION__, bench_malloc_library(), quick ? "--quick" : "full", repeat);
    for (const char *what : {"churn", "bulk", "regrowth"}) {
        if (!only.empty() && only != what) continue;
        std::vector<series> s;
        for (int r = 0; r < repeat; r++) {
            std::vector<row> rows;
            round(what, quick, true, rows);
            for (auto &x : rows) {
                series *hit = nullptr;
                for (auto &y : s)
                    if (y.variant == x.variant && y.key == x.key) hit = &y;
                if (!hit) {
                    s.push_back({x.variant, x.key, {}});
                    hit = &s.back();
                }
                hit->rounds.push_back(x.v);
            }
        }
        std::string w = what;
        if (w == "churn") print_churn(s, quick ? 100000 : 1000000, repeat);
        if (w == "bulk") print_bulk(s, quick ? bulk_quick : bulk_items, repeat);
        if (w == "regrowth") print_regrowth(s, quick ? 20000 : 100000, repeat);
        std::fflush(stdout);
    }
    if (!only.empty() && only != "churn" && only != "bulk" && only != "regrowth") {
        std::fprintf(stderr, "fm-bench-boost: no experiment '%s' (churn, bulk, regrowth)\n",
                     only.c_str());
        return 2;
    }
    return 0;
}
