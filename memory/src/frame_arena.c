/* frame_arena.c: N arenas used in turn, one per frame. */
#include "framemem/arena.h"

#include "internal.h"

#include <stdio.h>
#include <string.h>

struct fm_frame_arena {
    fm__frame_arena_hot hot; /* first: the inline fm_frame_alloc in arena.h reads
                                it; hot.current is arenas[current] */
    fm_arena *arenas[FM_FRAME_ARENA_MAX_FRAMES];
    uint32_t frames;
    uint32_t current;
    uint64_t frame;
    uint64_t high_water;
    uint64_t history[FM_FRAME_ARENA_HISTORY]; /* ring, newest at history_head - 1 */
    uint32_t history_head;
    uint32_t history_count;
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

fm_error fm_frame_arena_desc_check(const fm_frame_arena_desc *d, char *msg, size_t msg_len) {
    if (!d) return fm__desc_verdict("fm_frame_arena_desc_check", NULL, msg, msg_len);
    uint32_t frames = fm__def(d->frames, 2u);
    if (frames < 2 || frames > FM_FRAME_ARENA_MAX_FRAMES) {
        char why[64];
        snprintf(why, sizeof why, "frames must be 2..%d, not %u", FM_FRAME_ARENA_MAX_FRAMES, frames);
        return fm__desc_verdict(NULL, why, msg, msg_len);
    }
    if (d->tag && d->arena.tag && d->tag != d->arena.tag)
        return fm__desc_verdict(NULL, "tag and arena.tag name different tags", msg, msg_len);
    return fm_arena_desc_check(&d->arena, msg, msg_len);
}

fm_frame_arena *fm_frame_arena_create(const fm_frame_arena_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "frame arena: fm_frame_arena_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "frame");
    uint32_t frames = fm__def(desc->frames, 2u);
    char why[128];
    if (!fm__desc_accepted(fm_frame_arena_desc_check(desc, why, sizeof why), "frame arena", name, why))
        return NULL;
    size_t self_bytes;
    fm_frame_arena *fa =
        FM__OBJECT_NEW(fm_frame_arena, &desc->arena.allocator, "frame arena", name, &self_bytes);
    if (!fa) return NULL;
    fa->frames = frames;
    fa->allocator = desc->arena.allocator;
    fa->self_bytes = self_bytes;
    for (uint32_t i = 0; i < frames; i++) {
        char arena_name[96];
        snprintf(arena_name, sizeof arena_name, "%s[%u]", name, i);
        fm_arena_desc ad = desc->arena;
        ad.name = arena_name;
        ad.tag = fm__def(desc->tag, desc->arena.tag);
        fa->arenas[i] = fm_arena_create(&ad);
        if (!fa->arenas[i]) {
            fm_frame_arena_destroy(fa);
            return NULL;
        }
    }
    fa->hot.current = fa->arenas[0];
    return fa;
}

void fm_frame_arena_destroy(fm_frame_arena *fa) {
    if (!fa) return;
    for (uint32_t i = 0; i < fa->frames; i++) fm_arena_destroy(fa->arenas[i]);
    fm_allocator a = fa->allocator;
    fm_allocator_free(&a, fa, fa->self_bytes);
}

/* Parenthesised: optimised builds define fm_frame_alloc as a macro. */
void *(fm_frame_alloc)(fm_frame_arena *fa, size_t size, size_t align) {
    FM__REFUSE_NULL(fa, "frame arena", NULL);
    return FM__ARENA_ALLOC(fa->hot.current, size, align);
}

fm_arena *fm_frame_arena_current(fm_frame_arena *fa) {
    FM__REFUSE_NULL(fa, "frame arena", NULL);
    return fa->hot.current;
}

void fm_frame_arena_advance(fm_frame_arena *fa) {
    FM__REFUSE_NULL(fa, "frame arena", );
    /* Shared frame arenas: the jobs of the frame must be done (arena.h). */
    for (uint32_t i = 0; i < fa->frames; i++) {
        if (fm__arena_busy(fa->arenas[i])) {
            fm__report(FM_ERR_INVALID_ARG,
                       "frame arena '%s': advance while another thread allocates (join the "
                       "frame's jobs first); nothing changed",
                       fa->name);
            return;
        }
    }
    fm_arena_stats st;
    fm_arena_get_stats(fa->arenas[fa->current], &st);
    fa->history[fa->history_head] = st.used;
    fa->history_head = (fa->history_head + 1) % FM_FRAME_ARENA_HISTORY;
    if (fa->history_count < FM_FRAME_ARENA_HISTORY) fa->history_count++;
    if (st.used > fa->high_water) fa->high_water = st.used;
    fa->frame++;
    fa->current = (fa->current + 1) % fa->frames;
    fa->hot.current = fa->arenas[fa->current];
    /* The arena coming round served frame - frames (if there was one): its
     * memory is due. */
    if (fa->frame >= fa->frames) fm_arena_reset(fa->arenas[fa->current]);
}

void fm_frame_arena_get_stats(const fm_frame_arena *fa, fm_frame_arena_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    FM__REFUSE_NULL(fa, "frame arena", );
    if (!out) return;
    out->name = fa->name;
    out->frame = fa->frame;
    for (uint32_t i = 0; i < fa->frames; i++) {
        fm_arena_stats st;
        fm_arena_get_stats(fa->arenas[i], &st);
        if (i == fa->current) out->used = st.used;
        out->committed += st.committed;
        out->total_allocs += st.total_allocs;
        out->failed_allocs += st.failed_allocs;
        out->commit_events += st.commit_events;
    }
    out->high_water = out->used > fa->high_water ? out->used : fa->high_water;
    out->history_count = fa->history_count;
    for (uint32_t i = 0; i < fa->history_count; i++) {
        uint32_t slot = (fa->history_head + FM_FRAME_ARENA_HISTORY - 1 - i) % FM_FRAME_ARENA_HISTORY;
        out->history[i] = fa->history[slot];
    }
}
