/* Allocates, frees and double-frees through the public API, under a tag
 * with a budget and through typed wrappers and handles, leaks one item on
 * purpose, and runs a THREAD_CACHE pool from two threads (whose inline
 * paths, in optimised builds, read the library's thread-local variable:
 * across the boundary of a shared framemem too); exits 0 when everything
 * behaves as documented. Built with the flags the library's package gives
 * (CMake or pkg-config), it records allocation sites exactly when the
 * library does: never told otherwise; and it hears the profiler hooks
 * exactly when the library was built with FM_HOOKS (the package passes
 * -DFM_HOOKS then), or is told they cannot be installed. */
#include <framemem/framemem.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct thing {
    int a, b;
} thing;
FM_HANDLE_TYPE(thing_ref);
FM_POOL_DECLARE_TYPED(thing, thing_pool)
FM_POOL_DECLARE_HANDLE(thing, thing_pool, thing_ref)
#define thing_pool_alloc(pool) thing_pool_alloc_at((pool), FM_SITE)

static int reported, refused, no_sites;
static char leak_report[1024];
static void on_error(fm_error err, const char *msg, void *user) {
    (void)user;
    if (err == FM_ERR_DOUBLE_FREE) reported++;
    if (err == FM_ERR_BUDGET) refused++;
    if (err == FM_WARN_NO_SITES) no_sites++;
    if (err == FM_ERR_LEAK) snprintf(leak_report, sizeof leak_report, "%s", msg);
}

static int hook_allocs, hook_frees;
static void on_alloc(const void *ptr, size_t size, const char *name, void *user) {
    (void)ptr, (void)user;
    hook_allocs += size == sizeof(thing) && strcmp(name, "hooked") == 0;
}
static void on_free(const void *ptr, const char *name, void *user) {
    (void)ptr, (void)name, (void)user;
    hook_frees++;
}

/* 1000 allocations and frees on the calling thread's cache; 0 when all went well. */
static void *churn(void *pool) {
    thing *held[100];
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 100; i++)
            if (!(held[i] = thing_pool_alloc((fm_pool *)pool))) return pool;
        for (int i = 0; i < 100; i++) thing_pool_free((fm_pool *)pool, held[i]);
    }
    fm_pool_flush_thread_cache((fm_pool *)pool);
    return NULL;
}

int main(void) {
    fm_set_error_handler(on_error, NULL);
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "things", .hard_limit_bytes = 1 << 20});
    if (!tag) return 1;
    fm_pool *pool = fm_pool_create(&FM_POOL_DESC(thing, .initial_capacity = 16, .tag = tag));
    if (!pool) return 1;
    thing *t = thing_pool_alloc(pool);
    if (!t) return 2;
    t->a = 1;
    thing_ref ref = thing_pool_handle(pool, t);
    if (thing_pool_resolve(pool, ref) != t) return 4;
    thing_pool_free(pool, t);
    thing_pool_free(pool, t);
    if (thing_pool_resolve(pool, ref) != NULL) return 5;
    fm_pool_stats st;
    fm_pool_get_stats(pool, &st);
    /* Growth past the budget: refused, nothing changed. */
    if (fm_pool_reserve(pool, (1u << 20) / sizeof(thing) + 1) || refused != 1) return 6;
    fm_tag_stats ts;
    fm_tag_get_stats(tag, &ts);
    if (ts.committed != st.chunk_count * st.chunk_bytes || ts.growths_refused != 1) return 7;
    fm_pool_destroy(pool);
    fm_tag_destroy(tag);
    if (reported != 1 || st.live != 0 || st.total_frees != 1) return 3;

    fm_pool *leaky = fm_pool_create(&FM_POOL_DESC(thing, .name = "leaky"));
    if (!leaky) return 1;
    int line = __LINE__ + 1;
    if (!thing_pool_alloc(leaky)) return 2;
    fm_pool_destroy(leaky);
    if (no_sites != 0) {
        fprintf(stderr, "consumer: FM_WARN_NO_SITES: the package's flags do not match the library\n");
        return 8;
    }
#ifdef FM_TRACK_SITES
    char site[64];
    snprintf(site, sizeof site, "main.c:%d", line);
    if (!strstr(leak_report, site)) {
        fprintf(stderr, "consumer: the leak report lacks %s: %s\n", site, leak_report);
        return 9;
    }
#else
    (void)line;
#endif
    if (!strstr(leak_report, "1 live item")) return 10;

    fm_pool *shared = fm_pool_create(&FM_POOL_DESC(thing, .sync = FM_SYNC_THREAD_CACHE));
    pthread_t other;
    if (!shared || pthread_create(&other, NULL, churn, shared) != 0) return 11;
    void *mine = churn(shared), *theirs = NULL;
    pthread_join(other, &theirs);
    fm_pool_get_stats(shared, &st);
    fm_pool_destroy(shared);
    if (mine || theirs || st.live != 0 || st.total_allocs != 2000 || st.total_frees != 2000)
        return 12;

    bool hooked = fm_set_hooks(&(fm_hooks){.alloc = on_alloc, .free = on_free});
    fm_pool *watched = fm_pool_create(&FM_POOL_DESC(thing, .name = "hooked"));
    if (!watched) return 1;
    thing_pool_free(watched, thing_pool_alloc(watched));
    fm_pool_destroy(watched);
    fm_set_hooks(NULL);
#ifdef FM_HOOKS
    if (!hooked || hook_allocs != 1 || hook_frees != 1) {
        fprintf(stderr, "consumer: FM_HOOKS build, hooks heard %d alloc(s), %d free(s)\n",
                hook_allocs, hook_frees);
        return 13;
    }
#else
    if (hooked || hook_allocs || hook_frees || fm_last_error() != FM_ERR_UNSUPPORTED) return 14;
#endif
    printf("consumer ok%s\n", hooked ? " (profiler hooks)" : "");
    return 0;
}
