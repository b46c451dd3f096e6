/*
 * tests/fuzz/fuzz_config.c: the engine's pool-size INI loader on arbitrary
 * bytes.
 *
 * Model: loading never crashes and always leaves a config every pool and
 * arena could be built from (values inside the documented ranges); a
 * section is applied whole or not at all, so each pool ends up either as it
 * was or with a set of values that passed every check; the report holds one
 * "name:line: " message per problem (plus "not applied" notes) and its count
 * matches; loading the same bytes again gives the same config and report.
 */
#include "fuzz_support.h"

#include "engine/config.h"
#include "framemem/arena.h"
#include "framemem/pool.h"

/* An allocator for the chained-mode check; never called. */
static void *fz_never_alloc(size_t size, size_t align, void *user) {
    (void)size, (void)align, (void)user;
    return NULL;
}
static void fz_never_free(void *ptr, size_t size, void *user) { (void)ptr, (void)size, (void)user; }

static void check_config(const eng_config *c) {
    FZ_CHECK_EQ(c->pool_count, 6);
    FZ_CHECK_EQ(c->arena_count, 1);
    for (uint32_t i = 0; i < c->pool_count; i++) {
        const eng_pool_config *p = &c->pools[i];
        FZ_CHECK(p->initial_capacity >= 1 && p->initial_capacity <= (1u << 28));
        FZ_CHECK(p->max_capacity == 0 ||
                 (p->max_capacity >= p->initial_capacity && p->max_capacity <= (1u << 28)));
        FZ_CHECK((unsigned)p->growth < FM_GROWTH_COUNT);
        FZ_CHECK(p->grow_factor > 1.0f && p->grow_factor <= 64.0f);
        FZ_CHECK(p->grow_step <= (1u << 28));
        FZ_CHECK(p->chunk_bytes == 0 || (FM_IS_POW2(p->chunk_bytes) && p->chunk_bytes >= 4096 &&
                                         p->chunk_bytes <= FM_POOL_MAX_CHUNK_BYTES));
    }
    const eng_arena_config *a = &c->arenas[0];
    FZ_CHECK(a->reserve >= (1u << 20) && a->reserve <= ((uint64_t)64 << 30));
    FZ_CHECK(a->commit_step >= 4096 && a->commit_step <= a->reserve);
    /* and what create checks (with any item size, with or without an allocator) */
    for (uint32_t i = 0; i < c->pool_count; i++) {
        const eng_pool_config *p = &c->pools[i];
        FZ_CHECK_EQ(fm_pool_desc_check(&(fm_pool_desc){.item_size = 1,
                                                      .initial_capacity = p->initial_capacity,
                                                      .max_capacity = p->max_capacity,
                                                      .growth = p->growth,
                                                      .grow_step = p->grow_step,
                                                      .grow_factor = p->grow_factor,
                                                      .chunk_bytes = (size_t)p->chunk_bytes},
                                       NULL, 0),
                    FM_OK);
    }
    for (int m = 0; m < 2; m++) {
        fm_frame_arena_desc fd = {.arena = {.reserve_bytes = (size_t)a->reserve,
                                            .commit_step = (size_t)a->commit_step}};
        if (m) fd.arena.allocator = (fm_allocator){.alloc = fz_never_alloc, .free = fz_never_free};
        FZ_CHECK_EQ(fm_frame_arena_desc_check(&fd, NULL, 0), FM_OK);
    }
}

/* Report lines: every one starts with "fuzz.ini:<line>: " (or is the "..."
 * of a full buffer); problems = lines that are not "not applied" notes. */
static void check_report(const eng_config_diag *rep, int n) {
    FZ_CHECK(n >= 0);
    FZ_CHECK_EQ((uint32_t)n, rep->problems);
    FZ_CHECK(memchr(rep->text, 0, sizeof rep->text) != NULL);
    uint32_t lines = 0, notes = 0;
    bool truncated = false;
    for (const char *p = rep->text; *p;) {
        const char *nl = strchr(p, '\n');
        FZ_CHECK(nl != NULL);
        if (nl - p == 3 && memcmp(p, "...", 3) == 0) {
            truncated = true;
        } else {
            FZ_CHECK(strncmp(p, "fuzz.ini:", 9) == 0);
            const char *q = p + 9;
            FZ_CHECK(*q >= '1' && *q <= '9');
            while (*q >= '0' && *q <= '9') q++;
            FZ_CHECK(q[0] == ':' && q[1] == ' ');
            lines++;
            /* Notes end so; no problem message can (each ends in ')',
             * a quote or a fixed word). */
            static const char tail[] = " not applied: its values stay as they were";
            size_t tl = sizeof tail - 1;
            if ((size_t)(nl - p) >= tl && memcmp(nl - tl, tail, tl) == 0) notes++;
        }
        p = nl + 1;
    }
    if (!truncated) FZ_CHECK_EQ(lines - notes, rep->problems);
    else FZ_CHECK(lines - notes <= rep->problems);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_errors_begin();
    eng_config c, d, def;
    eng_config_defaults(&c);
    eng_config_defaults(&def);
    eng_config_diag rep;
    int n = eng_config_load_mem(&c, (const char *)data, size, "fuzz.ini", &rep);
    check_report(&rep, n);
    check_config(&c);
    /* Pool names and arena names never change; no problems means nothing
     * was refused. */
    for (uint32_t i = 0; i < c.pool_count; i++) FZ_CHECK(strcmp(c.pools[i].name, def.pools[i].name) == 0);
    FZ_CHECK(strcmp(c.arenas[0].name, "frame") == 0);
    /* Deterministic. */
    eng_config_defaults(&d);
    eng_config_diag rep2;
    int n2 = eng_config_load_mem(&d, (const char *)data, size, "fuzz.ini", &rep2);
    FZ_CHECK_EQ(n, n2);
    FZ_CHECK(memcmp(&c, &d, sizeof c) == 0);
    FZ_CHECK(strcmp(rep.text, rep2.text) == 0);
    /* Loading on top of a loaded config is as valid. */
    n2 = eng_config_load_mem(&d, (const char *)data, size, "fuzz.ini", &rep2);
    check_config(&d);
    return 0;
}
