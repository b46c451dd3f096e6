/* pool/check.c: fm_pool_check, a walk over every chunk that checks the
 * pool's invariants.
 */
#ifndef FM__POOL_UNIT
#error "pool/check.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

/* ================================================================= check */

#define FM__CHECK(cond, ...)                                                                   \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fm__report(FM_ERR_CORRUPT, __VA_ARGS__);                                           \
            return FM_ERR_CORRUPT;                                                             \
        }                                                                                      \
    } while (0)

static fm_error fm__check_core(const fm_pool *pool) {
    const fm_pool *p = pool;
    uint64_t live = 0, capacity = 0, retired = 0, held = 0;
    uint64_t in_state[FM__CHUNK_FULL + 1] = {0};
    uint64_t seen[65536 / 64]; /* slots met on a chunk's free stack */
    for (uint32_t ci = 0; ci < p->chunk_top; ci++) {
        const fm__chunk *c = fm__chunk_at(p, ci);
        if (c->state == FM__CHUNK_UNUSED) continue;
        held++;
        FM__CHECK(fm__table_find(p, (uintptr_t)c->base) == ci,
                  "pool '%s': chunk %u missing from the chunk table", p->name, ci);
        FM__CHECK(fm_is_aligned(c->base, p->chunk_bytes), "pool '%s': chunk %u misaligned",
                  p->name, ci);
        uint32_t bump = fm__chunk_bump(p, ci);
        uint32_t top = ci == p->cur_idx ? p->cs->cur_top : c->free_top;
        uint32_t next = ci == p->cur_idx && p->cs->cur_next_slot ? p->cs->cur_next : FM__NONE;
        /* The parked slot (see fm_pool) counts as a free slot of its chunk. */
        if (fm__parked_in(p, ci)) next = fm__parked_slot(p);
        FM__CHECK(bump <= c->limit && c->limit <= p->hot.per_chunk,
                  "pool '%s': chunk %u bump %u / limit %u out of range", p->name, ci, bump,
                  c->limit);
        FM__CHECK(c->state != FM__CHUNK_FRESH || (bump == 0 && top == 0),
                  "pool '%s': fresh chunk %u has been used", p->name, ci);
        FM__CHECK((c->state == FM__CHUNK_CURRENT) == (ci == p->cur_idx),
                  "pool '%s': chunk %u current state disagrees", p->name, ci);
        uintptr_t base = (uintptr_t)c->base;
        uint32_t n_live = 0, n_retired = 0, n_free = 0;
        for (uint32_t s = 0; s < bump; s++) {
            uint32_t m = fm__meta_get(base, s);
            if (m & FM__LIVE) n_live++;
            else if (m == FM__RETIRED) n_retired++;
        }
        /* Above the bump index after a reset: slots handed out before it,
         * which allocations walk again; only the retired ones count. */
        uint32_t used = fm__chunk_used(p, ci), n_retired_above = 0;
        FM__CHECK(used <= c->limit, "pool '%s': chunk %u used %u past its limit %u", p->name, ci,
                  used, c->limit);
        for (uint32_t s = bump; s < used; s++)
            n_retired_above += fm__meta_get(base, s) == FM__RETIRED;
        FM__CHECK(next == FM__NONE ||
                      (p->cs->cur_next_slot == fm__slot(p, c->base, next) &&
                       p->cs->cur_next_meta == fm__meta(base) + next),
                  "pool '%s': chunk %u next free slot's pointer and index disagree", p->name, ci);
        uint32_t n_stacked = top + (next != FM__NONE);
        FM__CHECK(n_stacked <= bump, "pool '%s': chunk %u free stack holds %u of %u used slots",
                  p->name, ci, n_stacked, bump);
        memset(seen, 0, ((size_t)bump + 63) / 64 * sizeof seen[0]);
        const uint16_t *stack = fm__stack(p, c->base);
        for (uint32_t i = 0; i < n_stacked; i++, n_free++) {
            uint32_t s = i < top ? stack[i] : next;
            FM__CHECK(s < bump, "pool '%s': chunk %u free stack holds slot %u past the bump index",
                      p->name, ci, s);
            FM__CHECK(!(fm__meta_get(base, s) & FM__LIVE) && fm__meta_get(base, s) != FM__RETIRED,
                      "pool '%s': chunk %u free stack holds a live or retired slot %u", p->name,
                      ci, s);
            FM__CHECK(!(seen[s / 64] >> (s % 64) & 1u),
                      "pool '%s': chunk %u free stack holds slot %u twice", p->name, ci, s);
            seen[s / 64] |= (uint64_t)1 << (s % 64);
        }
        /* Under THREAD_CACHE and LOCKFREE the slots out of the core are
         * live items or free slots held by caches or the shared stack. */
        bool cached = fm__cached_policy(p);
        FM__CHECK(n_retired + n_free <= bump &&
                      (cached ? n_live <= bump - n_retired - n_free
                              : n_live + n_retired + n_free == bump),
                  "pool '%s': chunk %u: %u live + %u retired + %u free != %u used slots", p->name,
                  ci, n_live, n_retired, n_free, bump);
        uint32_t n_out = bump - n_retired - n_free;
        FM__CHECK(n_out == fm__chunk_live(p, ci) && n_retired + n_retired_above == c->retired,
                  "pool '%s': chunk %u live count %u, live bits %u", p->name, ci,
                  fm__chunk_live(p, ci), n_live);
        /* Full: nothing on the stack, and above the bump index only retired
         * slots. */
        FM__CHECK(c->state != FM__CHUNK_FULL || (top == 0 && c->limit - bump == n_retired_above),
                  "pool '%s': chunk %u marked full but has room", p->name, ci);
        /* Lists follow the record's count, in which a parked slot is live. */
        uint32_t n_rec = n_out + fm__parked_in(p, ci);
        FM__CHECK(c->state != FM__CHUNK_PARTIAL || (n_rec > 0 && !fm__chunk_exhausted(c)),
                  "pool '%s': chunk %u in the partial list is empty or full", p->name, ci);
        FM__CHECK(c->state != FM__CHUNK_EMPTY || (n_rec == 0 && !fm__chunk_exhausted(c)),
                  "pool '%s': chunk %u in the empty list has live items", p->name, ci);
        in_state[c->state]++;
        live += n_out;
        retired += n_retired + n_retired_above;
        capacity += c->limit - n_retired - n_retired_above;
    }
    const struct {
        const fm__list *list;
        uint32_t state;
        const char *name;
    } lists[] = {{&p->partial, FM__CHUNK_PARTIAL, "partial"},
                 {&p->empty, FM__CHUNK_EMPTY, "empty"}};
    for (int l = 0; l < 2; l++) {
        uint64_t walked = 0;
        uint32_t prev = FM__NONE;
        for (uint32_t i = lists[l].list->head; i != FM__NONE; prev = i, i = fm__chunk_at(p, i)->next) {
            FM__CHECK(i < p->chunk_top && fm__chunk_at(p, i)->state == lists[l].state &&
                          fm__chunk_at(p, i)->prev == prev,
                      "pool '%s': %s list broken at chunk %u", p->name, lists[l].name, i);
            FM__CHECK(++walked <= in_state[lists[l].state], "pool '%s': %s list too long",
                      p->name, lists[l].name);
        }
        FM__CHECK(walked == in_state[lists[l].state] && lists[l].list->tail == prev,
                  "pool '%s': %llu %s chunks, %llu listed", p->name,
                  (unsigned long long)in_state[lists[l].state], lists[l].name,
                  (unsigned long long)walked);
    }
    /* Chunks mapped by a growth that have no record yet. */
    for (const fm__span *sp = p->spans; sp; sp = sp->next_span) {
        FM__CHECK(sp->left > 0 && sp->last_limit <= p->hot.per_chunk,
                  "pool '%s': span of %u chunks (last limit %u) out of range", p->name, sp->left,
                  sp->last_limit);
        held += sp->left;
        capacity += (uint64_t)(sp->left - 1) * p->hot.per_chunk + sp->last_limit;
    }
    FM__CHECK(held == p->chunk_count, "pool '%s': chunk count %u, held %llu", p->name,
              p->chunk_count, (unsigned long long)held);
    FM__CHECK(live == fm__live(p), "pool '%s': live %llu, counted %llu", p->name,
              (unsigned long long)fm__live(p), (unsigned long long)live);
    FM__CHECK(capacity == p->capacity && retired == p->retired,
              "pool '%s': capacity %llu, counted %llu", p->name,
              (unsigned long long)p->capacity, (unsigned long long)capacity);
    FM__CHECK(p->cs->headroom >= 0 && (uint64_t)p->cs->headroom <= p->cs->peak_live,
              "pool '%s': live count out of range", p->name);
    return FM_OK;
}
