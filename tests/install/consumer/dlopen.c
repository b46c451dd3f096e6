/* Loads a shared framemem after start-up (dlopen, argv[1]) and runs a
 * THREAD_CACHE pool through it: the library's thread-local variable uses the
 * initial-exec model, which a library loaded late gets from glibc's static
 * TLS reserve. Exits 0 when it worked. */
#include <framemem/pool.h>

#include <dlfcn.h>
#include <stdio.h>

typedef fm_pool *(*create_fn)(const fm_pool_desc *);
typedef void *(*alloc_fn)(fm_pool *);
typedef void (*free_fn)(fm_pool *, void *);
typedef void (*stats_fn)(const fm_pool *, fm_pool_stats *);
typedef void (*destroy_fn)(fm_pool *);

int main(int argc, char **argv) {
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", argc > 1 ? dlerror() : "no library given");
        return 1;
    }
    /* Through a union: ISO C has no conversion from void * to a function pointer. */
    union {
        void *p;
        create_fn create;
        alloc_fn alloc;
        free_fn free;
        stats_fn stats;
        destroy_fn destroy;
    } create, alloc, release, stats, destroy;
    create.p = dlsym(lib, "fm_pool_create");
    alloc.p = dlsym(lib, "fm_pool_alloc");
    release.p = dlsym(lib, "fm_pool_free");
    stats.p = dlsym(lib, "fm_pool_get_stats");
    destroy.p = dlsym(lib, "fm_pool_destroy");
    if (!create.p || !alloc.p || !release.p || !stats.p || !destroy.p) return 2;

    fm_pool *pool = create.create(&FM_POOL_DESC(double, .sync = FM_SYNC_THREAD_CACHE));
    if (!pool) return 3;
    void *items[300];
    for (int i = 0; i < 300; i++)
        if (!(items[i] = alloc.alloc(pool))) return 4;
    for (int i = 0; i < 300; i++) release.free(pool, items[i]);
    fm_pool_stats st;
    stats.stats(pool, &st);
    destroy.destroy(pool);
    dlclose(lib);
    if (st.live != 0 || st.total_allocs != 300) return 5;
    printf("dlopen ok\n");
    return 0;
}
