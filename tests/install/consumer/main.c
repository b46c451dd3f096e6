/* Allocates, frees and double-frees through the public API; exits 0 when
 * everything behaves as documented. */
#include <framemem/framemem.h>

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
    printf("consumer ok\n");
    return 0;
}
