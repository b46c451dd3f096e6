/*
 * tests/fuzz/fuzz_config.c: the INI config loader (framemem/config.h) on
 * arbitrary bytes, applied to the descs of a program (the engine's pools,
 * its frame arena, a tag).
 *
 * Model: loading never crashes; the report holds one "name:line: " message
 * per problem (plus "not applied" notes) and its count matches; applying a
 * section leaves a desc either as it was (0: no section, -1: refused, a
 * problem added) or with values that pass every check of create (with
 * small and big items, the frame arena with and without an allocator) and
 * stay in the documented ranges; loading and applying the same bytes again
 * gives the same descs and report.
 */
#include "fuzz_support.h"

#include "framemem/arena.h"
#include "framemem/config.h"
#include "framemem/pool.h"
#include "framemem/tag.h"

/* An allocator for the chained-mode check; never called. */
static void *fz_never_alloc(size_t size, size_t align, void *user) {
    (void)size, (void)align, (void)user;
    return NULL;
}
static void fz_never_free(void *ptr, size_t size, void *user) { (void)ptr, (void)size, (void)user; }

static const char *const fz_pools[] = {"entities", "transforms", "velocities",
                                       "lifetimes", "emitters",   "particles"};
enum { FZ_POOLS = sizeof fz_pools / sizeof fz_pools[0] };

typedef struct fz_applied {
    fm_pool_desc pools[FZ_POOLS];
    int pool_rc[FZ_POOLS];
    fm_frame_arena_desc frame;
    int frame_rc;
    fm_tag_desc tag;
    int tag_rc;
} fz_applied;

/* The program's descs before the config: a pool of 64-byte items starting
 * at 1024, the frame arena's defaults, a tag with no limits. */
static void fz_apply(fm_config *c, fz_applied *a) {
    memset(a, 0, sizeof *a);
    for (int i = 0; i < FZ_POOLS; i++) {
        a->pools[i] = (fm_pool_desc){.name = fz_pools[i], .item_size = 64, .initial_capacity = 1024};
        fm_pool_desc before = a->pools[i];
        a->pool_rc[i] = fm_config_apply_pool(c, &a->pools[i]);
        FZ_CHECK(a->pool_rc[i] >= -1 && a->pool_rc[i] <= 1);
        if (a->pool_rc[i] <= 0) FZ_CHECK(memcmp(&before, &a->pools[i], sizeof before) == 0);
    }
    a->frame = (fm_frame_arena_desc){.name = "frame"};
    a->frame_rc = fm_config_apply_frame_arena(c, &a->frame);
    if (a->frame_rc <= 0) FZ_CHECK(a->frame.arena.reserve_bytes == 0 && a->frame.arena.commit_step == 0);
    a->tag = (fm_tag_desc){.name = "level"};
    a->tag_rc = fm_config_apply_tag(c, &a->tag);
    if (a->tag_rc <= 0) FZ_CHECK(a->tag.soft_limit_bytes == 0 && a->tag.hard_limit_bytes == 0);
}

static void check_applied(const fz_applied *a) {
    for (int i = 0; i < FZ_POOLS; i++) {
        const fm_pool_desc *p = &a->pools[i];
        FZ_CHECK(p->initial_capacity >= 1 && p->initial_capacity <= (1u << 28));
        FZ_CHECK(p->max_capacity == 0 ||
                 (p->max_capacity >= p->initial_capacity && p->max_capacity <= (1u << 28)));
        FZ_CHECK((unsigned)p->growth < FM_GROWTH_COUNT);
        FZ_CHECK(p->grow_factor == 0.0f || (p->grow_factor > 1.0f && p->grow_factor <= 64.0f));
        FZ_CHECK(p->grow_step <= (1u << 28));
        FZ_CHECK(p->chunk_bytes == 0 || (FM_IS_POW2(p->chunk_bytes) && p->chunk_bytes >= 4096 &&
                                         p->chunk_bytes <= FM_POOL_MAX_CHUNK_BYTES));
        /* what create checks, with small items and (where the file set
         * no chunk size, which apply checks against the item) big ones */
        FZ_CHECK_EQ(fm_pool_desc_check(p, NULL, 0), FM_OK);
        fm_pool_desc big = *p;
        big.item_size = 1 << 20;
        if (!p->chunk_bytes) FZ_CHECK_EQ(fm_pool_desc_check(&big, NULL, 0), FM_OK);
    }
    const fm_arena_desc *ar = &a->frame.arena;
    FZ_CHECK(ar->reserve_bytes == 0 ||
             (ar->reserve_bytes >= (1u << 20) && ar->reserve_bytes <= ((uint64_t)64 << 30)));
    FZ_CHECK(ar->commit_step == 0 || ar->commit_step >= 4096);
    for (int m = 0; m < 2; m++) {
        fm_frame_arena_desc fd = a->frame;
        if (m) fd.arena.allocator = (fm_allocator){.alloc = fz_never_alloc, .free = fz_never_free};
        FZ_CHECK_EQ(fm_frame_arena_desc_check(&fd, NULL, 0), FM_OK);
    }
    FZ_CHECK_EQ(fm_tag_desc_check(&a->tag, NULL, 0), FM_OK);
}

/* Report lines: every one starts with "fuzz.ini:<line>: " (or is the "..."
 * of a full buffer); problems = lines that are not "not applied" notes. */
static void check_report(const fm_config *c) {
    const char *text = fm_config_problems(c);
    uint32_t problems = fm_config_problem_count(c);
    FZ_CHECK(strlen(text) < 4096);
    uint32_t lines = 0, notes = 0;
    bool truncated = false;
    for (const char *p = text; *p;) {
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
            static const char tail[] = " not applied: its values stay as the program sets them";
            size_t tl = sizeof tail - 1;
            if ((size_t)(nl - p) >= tl && memcmp(nl - tl, tail, tl) == 0) notes++;
        }
        p = nl + 1;
    }
    if (!truncated) FZ_CHECK_EQ(lines - notes, problems);
    else FZ_CHECK(lines - notes <= problems);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_errors_begin();
    char err[256] = "";
    fm_config *c = fm_config_load_mem((const char *)data, size, "fuzz.ini", NULL, err, sizeof err);
    FZ_CHECK(c != NULL); /* in memory: only running out of memory fails */
    check_report(c);
    static fz_applied a, b;
    fz_apply(c, &a);
    check_report(c); /* apply's refusals are problems at their lines too */
    check_applied(&a);
    fm_config_report_unused(c);
    check_report(c);
    /* Deterministic. */
    fm_config *d = fm_config_load_mem((const char *)data, size, "fuzz.ini", NULL, err, sizeof err);
    FZ_CHECK(d != NULL);
    fz_apply(d, &b);
    FZ_CHECK(memcmp(a.pool_rc, b.pool_rc, sizeof a.pool_rc) == 0);
    for (int i = 0; i < FZ_POOLS; i++)
        FZ_CHECK(memcmp(&a.pools[i], &b.pools[i], sizeof a.pools[i]) == 0);
    FZ_CHECK(memcmp(&a.frame, &b.frame, sizeof a.frame) == 0 && a.frame_rc == b.frame_rc);
    FZ_CHECK(memcmp(&a.tag, &b.tag, sizeof a.tag) == 0 && a.tag_rc == b.tag_rc);
    fm_config_report_unused(d);
    FZ_CHECK(strcmp(fm_config_problems(c), fm_config_problems(d)) == 0);
    FZ_CHECK_EQ(fm_config_problem_count(c), fm_config_problem_count(d));
    /* Applying again onto the applied descs is as valid. */
    for (int i = 0; i < FZ_POOLS; i++) fm_config_apply_pool(d, &b.pools[i]);
    fm_config_apply_frame_arena(d, &b.frame);
    fm_config_apply_tag(d, &b.tag);
    check_applied(&b);
    fm_config_destroy(d);
    fm_config_destroy(c);
    return 0;
}
