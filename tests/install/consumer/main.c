/* Allocates, frees and double-frees through the public API, and runs a
 * THREAD_CACHE pool from two threads (whose inline paths, in optimised
 * builds, read the library's thread-local variable: across the boundary of
 * a shared framemem too); exits 0 when everything behaves as documented. */
#include <framemem/framemem.h>

#include <pthread.h>
#include <stdio.h>

typedef struct thing {
    int a, b;
} thing;
FM_POOL_DECLARE_TYPED(thing, thing_pool)

static int reported;
static void on_error(fm_error err, const char *msg, void *user) {
    (void)msg, (void)user;
    if (err == FM_ERR_DOUBLE_FREE) reported++;
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
    fm_pool *pool = fm_pool_create(&FM_POOL_DESC(thing, .initial_capacity = 16));
    if (!pool) return 1;
    thing *t = thing_pool_alloc(pool);
    if (!t) return 2;
    t->a = 1;
    thing_pool_free(pool, t);
    thing_pool_free(pool, t);
    fm_pool_stats st;
    fm_pool_get_stats(pool, &st);
    fm_pool_destroy(pool);
    if (reported != 1 || st.live != 0 || st.total_frees != 1) return 3;

    fm_pool *shared = fm_pool_create(&FM_POOL_DESC(thing, .sync = FM_SYNC_THREAD_CACHE));
    pthread_t other;
    if (!shared || pthread_create(&other, NULL, churn, shared) != 0) return 4;
    void *mine = churn(shared), *theirs = NULL;
    pthread_join(other, &theirs);
    fm_pool_get_stats(shared, &st);
    fm_pool_destroy(shared);
    if (mine || theirs || st.live != 0 || st.total_allocs != 2000 || st.total_frees != 2000)
        return 5;
    printf("consumer ok\n");
    return 0;
}
