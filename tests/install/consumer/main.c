/* Allocates, frees and double-frees through the public API, under a tag
 * with a budget and through typed wrappers and handles, and leaks one item
 * on purpose; exits 0 when everything behaves as documented. Built with the
 * flags the library's package gives (CMake or pkg-config), it records
 * allocation sites exactly when the library does: never told otherwise. */
#include <framemem/framemem.h>

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
    printf("consumer ok\n");
    return 0;
}
