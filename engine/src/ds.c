/* ds.c: the engine's copy of stb_ds (engine/ds.h), its blocks from an
 * fm_allocator, its growth made to fail cleanly. Calls util.c only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STB_DS_IMPLEMENTATION
#include "engine/ds.h"

#include "eng_internal.h"

/*
 * How growth fails cleanly. stb_ds calls STBDS_REALLOC and uses the answer
 * unchecked, and its context argument is always NULL in this version. So the
 * checked entry points (eng__ds_arr_reserve, eng__ds_sh_prepare) work out
 * every block stb_ds is about to ask for, obtain them all from the
 * allocator first (returning false, nothing changed, when one is refused),
 * and park them in this thread's stash; eng__ds_realloc then hands out the
 * parked block of the size asked for. Any request the stash cannot serve
 * (stb_ds growing by itself, outside the checked entry points) is served
 * from the allocator directly, and a refusal there cannot be reported to
 * anyone: it aborts with a message.
 *
 * Every block carries a small header before stb_ds's own: its size and the
 * allocator it came from, since fm_allocator frees need the size and
 * STBDS_FREE gives neither.
 */

typedef struct eng__ds_block {
    size_t size;         /* bytes after the header */
    fm_allocator alloc;  /* where the block came from and goes back to */
} eng__ds_block;

#define ENG__DS_HEAD                                                            \
    ((sizeof(eng__ds_block) + FM_DEFAULT_ALIGN - 1) / FM_DEFAULT_ALIGN * FM_DEFAULT_ALIGN)
#define ENG__DS_STASH 4

/* The blocks obtained for the stb_ds call in progress on this thread. */
static _Thread_local struct {
    eng__ds_block *block[ENG__DS_STASH];
    int count;
    fm_allocator alloc; /* unplanned new blocks of that call */
} eng__ds_stash;

static eng__ds_block *eng__ds_block_of(void *p) {
    return (eng__ds_block *)(void *)((char *)p - ENG__DS_HEAD);
}
static void *eng__ds_data(eng__ds_block *b) { return (char *)b + ENG__DS_HEAD; }

static eng__ds_block *eng__ds_block_new(const fm_allocator *a, size_t size) {
    if (size > SIZE_MAX - ENG__DS_HEAD) return NULL;
    eng__ds_block *b = eng__mem_alloc(a, ENG__DS_HEAD + size);
    if (!b) return NULL;
    b->size = size;
    b->alloc = a ? *a : (fm_allocator){0};
    return b;
}

static void eng__ds_block_free(eng__ds_block *b) {
    fm_allocator a = b->alloc;
    eng__mem_free(&a, b, ENG__DS_HEAD + b->size);
}

/* --------------------------------------------------------------- stash */

/* Obtains a block of size bytes for the coming stb_ds call; false when refused. */
static bool eng__ds_stash_add(const fm_allocator *a, size_t size) {
    if (eng__ds_stash.count == ENG__DS_STASH) return false; /* never: at most 3 per call */
    eng__ds_block *b = eng__ds_block_new(a, size);
    if (!b) return false;
    eng__ds_stash.block[eng__ds_stash.count++] = b;
    eng__ds_stash.alloc = b->alloc;
    return true;
}

/* Gives back what the call did not take (a key that was already there). */
void eng__ds_done(void) {
    for (int i = 0; i < eng__ds_stash.count; i++) eng__ds_block_free(eng__ds_stash.block[i]);
    eng__ds_stash.count = 0;
    eng__ds_stash.alloc = (fm_allocator){0};
}

static eng__ds_block *eng__ds_stash_take(size_t size) {
    for (int i = 0; i < eng__ds_stash.count; i++) {
        eng__ds_block *b = eng__ds_stash.block[i];
        if (b->size != size) continue;
        eng__ds_stash.block[i] = eng__ds_stash.block[--eng__ds_stash.count];
        return b;
    }
    return NULL;
}

/* ------------------------------------------------- stb_ds's allocator */

void *eng__ds_realloc(void *p, size_t size) {
    eng__ds_block *old = p ? eng__ds_block_of(p) : NULL;
    eng__ds_block *b = eng__ds_stash_take(size);
    if (!b) {
        fm_allocator a = old ? old->alloc : eng__ds_stash.alloc;
        b = eng__ds_block_new(&a, size);
        if (!b) {
            fprintf(stderr,
                    "engine/ds.h: stb_ds needed %zu bytes outside ENG_ARR_RESERVE and "
                    "ENG_SH_PUT, and they were refused\n",
                    size);
            abort();
        }
    }
    if (old) {
        memcpy(eng__ds_data(b), p, old->size < size ? old->size : size);
        eng__ds_block_free(old);
    }
    return eng__ds_data(b);
}

void eng__ds_free(void *p) {
    if (p) eng__ds_block_free(eng__ds_block_of(p));
}

/* ------------------------------------------------------------- arrays */

/* Grows the array *(void **)arrp to hold n more items (see ENG_ARR_RESERVE). */
bool eng__ds_arr_reserve(void *arrp, size_t item_size, size_t n, const fm_allocator *alloc) {
    void *a;
    memcpy(&a, arrp, sizeof a);
    size_t len = stbds_arrlenu(a), cap = stbds_arrcap(a);
    if (n <= cap - len) return true;
    if (n > SIZE_MAX / 2 - len) return false;
    /* stb_ds's own rule (double, at least 4), chosen here so that the
     * request below is known: arrgrowf keeps a min_cap that is at least
     * twice the capacity and at least 4. */
    size_t new_cap = len + n;
    if (cap <= SIZE_MAX / 2 && cap * 2 > new_cap) new_cap = cap * 2;
    if (new_cap < 4) new_cap = 4;
    if (item_size && new_cap > (SIZE_MAX - ENG__DS_HEAD - sizeof(stbds_array_header)) / item_size)
        return false;
    size_t bytes = item_size * new_cap + sizeof(stbds_array_header);
    const fm_allocator *from = a ? &eng__ds_block_of(stbds_header(a))->alloc : alloc;
    if (!eng__ds_stash_add(from, bytes)) return false;
    a = stbds_arrgrowf(a, item_size, 0, new_cap);
    eng__ds_done();
    memcpy(arrp, &a, sizeof a);
    return true;
}

/* --------------------------------------------------------------- maps */

/* Bytes of the hash index stb_ds makes for slot_count slots. */
static size_t eng__ds_index_bytes(size_t slot_count) {
    return (slot_count >> STBDS_BUCKET_SHIFT) * sizeof(stbds_hash_bucket) +
           sizeof(stbds_hash_index) + STBDS_CACHE_LINE_SIZE - 1;
}

/* A new string map whose keys are copies (stbds_sh_new_strdup); NULL when
 * refused. */
static void *eng__ds_sh_new(size_t entry_size, const fm_allocator *alloc) {
    /* stbds_shmode_func: an array of 4 entries (its first is the default
     * value), then an index of STBDS_BUCKET_LENGTH slots. */
    if (!eng__ds_stash_add(alloc, entry_size * 4 + sizeof(stbds_array_header)) ||
        !eng__ds_stash_add(alloc, eng__ds_index_bytes(STBDS_BUCKET_LENGTH))) {
        eng__ds_done();
        return NULL;
    }
    void *m = stbds_shmode_func(entry_size, STBDS_SH_STRDUP);
    eng__ds_done();
    return m;
}

/* Obtains every block a stbds_shput of key into *(void **)mapp will ask for;
 * the put runs next and eng__ds_done gives back what it did not take. false
 * (the map holding what it held; a new map not made) when one is refused. */
bool eng__ds_sh_prepare(void *mapp, size_t entry_size, const char *key, const fm_allocator *alloc) {
    void *m;
    memcpy(&m, mapp, sizeof m);
    bool made = false;
    if (!m) {
        m = eng__ds_sh_new(entry_size, alloc);
        if (!m) return false;
        made = true;
    }
    /* The entries, with the default one before the map pointer. */
    void *raw = (char *)m - entry_size;
    bool ok = eng__ds_arr_reserve(&raw, entry_size, 1, NULL);
    m = (char *)raw + entry_size;
    if (ok) {
        stbds_array_header *h = stbds_header(raw);
        const fm_allocator *from = &eng__ds_block_of(h)->alloc;
        stbds_hash_index *index = h->hash_table;
        /* stbds_hmput_key doubles the index before it looks the key up. */
        if (index->used_count >= index->used_count_threshold)
            ok = eng__ds_stash_add(from, eng__ds_index_bytes(index->slot_count * 2));
        /* A new key is copied (stbds_strdup). */
        ok = ok && eng__ds_stash_add(from, strlen(key) + 1);
    }
    if (!ok) {
        eng__ds_done();
        if (made) {
            stbds_hmfree_func(raw, entry_size);
            m = NULL;
        }
    }
    memcpy(mapp, &m, sizeof m);
    return ok;
}

ptrdiff_t eng__ds_sh_index(const void *map, size_t entry_size, const char *key) {
    if (!map) return -1; /* stbds_hmget_key would make a map to answer */
    void *m = stbds_hmget_key((void *)map, entry_size, (void *)key, sizeof(char *),
                              STBDS_HM_STRING);
    return stbds_temp(STBDS_HASH_TO_ARR(m, entry_size));
}
