/* tag.c: memory tags with budgets (framemem/tag.h).
 *
 * Charging: each tag keeps two counters of bytes. `pending` holds what is
 * committed plus the growths under way, and is what the hard limit tests: a
 * charge raises it with a compare-and-swap loop that refuses to pass the
 * limit, on the tag and then on each ancestor, and lowers it again on the
 * tags below when an ancestor refuses. Only once the memory is had
 * (fm__tag_charged) is `committed` raised, by one atomic add per tag: that
 * add is the one place a rise above the soft limit can happen, so each
 * crossing is seen by exactly one thread (the one whose add crossed it),
 * which reports it; and peak follows committed. A refused charge, or a
 * growth whose memory could not be had (fm__tag_refund), never touches
 * committed, so no crossing is reported and then taken back and peak never
 * counts memory that was not held. Uncharging lowers committed, then
 * pending, keeping committed <= pending at all times.
 *
 * The lists (objects naming a tag, child tags) change only at create and
 * destroy, under the tag's lock. Locks are taken parent before child
 * (fm_tag_get_stats walks down) and tag before object (it reads each
 * object's live count); nothing takes a tag's lock while holding an
 * object's, and charges take no lock at all.
 */
#include "framemem/tag.h"

#include "internal.h"
#include "platform/thread.h"
#include "tag_internal.h"

#include <stdio.h>
#include <string.h>

struct fm_tag {
    /* bytes; atomic */
    uint64_t pending;   /* committed + growths under way: the hard limit's count */
    uint64_t committed; /* the soft limit's count and the stats' */
    uint64_t reserved;
    uint64_t peak;
    uint64_t refused;
    uint64_t soft_crossings;
    fm_tag_desc desc; /* as created; desc.name points at name[] */
    uint32_t depth;   /* 1 for a tag without a parent */
    fm__mutex lock;   /* members, children and their counts */
    fm__tag_link *members;
    uint32_t n_members;
    uint32_t n_children;
    fm_tag *first_child;
    fm_tag *prev_sibling, *next_sibling; /* in the parent's list */
    size_t self_bytes;
    char name[];
};

/* ================================================================ create */

fm_error fm_tag_desc_check(const fm_tag_desc *d, char *msg, size_t msg_len) {
    if (!d) return fm__desc_verdict("fm_tag_desc_check", NULL, msg, msg_len);
    const char *why = NULL;
    if (!fm_allocator_valid(&d->allocator)) why = "allocator needs both alloc and free";
    else if (d->soft_limit_bytes && d->hard_limit_bytes &&
             d->soft_limit_bytes > d->hard_limit_bytes)
        why = "soft_limit_bytes above hard_limit_bytes (the soft limit could never be reached)";
    else if (d->parent && d->parent->depth >= FM_TAG_MAX_DEPTH)
        why = "the parent chain would be longer than FM_TAG_MAX_DEPTH tags";
    return fm__desc_verdict(NULL, why, msg, msg_len);
}

fm_tag *fm_tag_create(const fm_tag_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "tag: fm_tag_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "tag");
    char why[128];
    if (!fm__desc_accepted(fm_tag_desc_check(desc, why, sizeof why), "tag", name, why)) return NULL;
    size_t self_bytes;
    fm_tag *t = FM__OBJECT_NEW(fm_tag, &desc->allocator, "tag", name, &self_bytes);
    if (!t) return NULL;
    if (!fm__mutex_init(&t->lock, false)) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "tag '%s': cannot create its lock", name);
        fm_allocator_free(&desc->allocator, t, self_bytes);
        return NULL;
    }
    t->self_bytes = self_bytes;
    t->desc = *desc;
    t->desc.name = t->name;
    t->depth = 1;
    fm_tag *parent = desc->parent;
    if (parent) {
        t->depth = parent->depth + 1;
        fm__mutex_lock(&parent->lock);
        t->next_sibling = parent->first_child;
        if (t->next_sibling) t->next_sibling->prev_sibling = t;
        parent->first_child = t;
        parent->n_children++;
        fm__mutex_unlock(&parent->lock);
    }
    return t;
}

void fm_tag_destroy(fm_tag *tag) {
    if (!tag) return;
    fm__mutex_lock(&tag->lock);
    uint32_t objects = tag->n_members, children = tag->n_children;
    fm__mutex_unlock(&tag->lock);
    if (objects || children) {
        fm__report(FM_ERR_INVALID_ARG,
                   "tag '%s': destroy refused: %u object(s) and %u child tag(s) still name it "
                   "(destroy them first); the tag is unchanged",
                   tag->name, objects, children);
        return;
    }
    fm_tag *parent = tag->desc.parent;
    if (parent) {
        fm__mutex_lock(&parent->lock);
        if (tag->prev_sibling) tag->prev_sibling->next_sibling = tag->next_sibling;
        else parent->first_child = tag->next_sibling;
        if (tag->next_sibling) tag->next_sibling->prev_sibling = tag->prev_sibling;
        parent->n_children--;
        fm__mutex_unlock(&parent->lock);
    }
    fm__mutex_destroy(&tag->lock);
    fm_allocator a = tag->desc.allocator;
    fm_allocator_free(&a, tag, tag->self_bytes);
}

/* ================================================================ members */

void fm__tag_attach(fm_tag *tag, fm__tag_link *link, uint32_t kind, void *object) {
    if (!tag) return;
    link->object = object;
    link->kind = kind;
    link->prev = NULL;
    fm__mutex_lock(&tag->lock);
    link->next = tag->members;
    if (link->next) link->next->prev = link;
    tag->members = link;
    tag->n_members++;
    fm__mutex_unlock(&tag->lock);
}

void fm__tag_detach(fm_tag *tag, fm__tag_link *link) {
    if (!tag) return;
    fm__mutex_lock(&tag->lock);
    if (link->prev) link->prev->next = link->next;
    else tag->members = link->next;
    if (link->next) link->next->prev = link->prev;
    tag->n_members--;
    fm__mutex_unlock(&tag->lock);
    link->prev = link->next = NULL;
}

/* ============================================================== charging */

static void fm__raise_peak(fm_tag *t, uint64_t v) {
    uint64_t peak = FM__ATOMIC_LOAD(&t->peak, RELAXED);
    while (v > peak && !FM__ATOMIC_CAS_WEAK(&t->peak, &peak, v, RELAXED, RELAXED)) {
    }
}

/* Raises t's pending count by bytes unless that passes its hard limit;
 * false with *held set to what it held otherwise. */
static bool fm__tag_take(fm_tag *t, uint64_t bytes, uint64_t *held) {
    uint64_t hard = t->desc.hard_limit_bytes;
    uint64_t cur = FM__ATOMIC_LOAD(&t->pending, RELAXED);
    do {
        if (hard && (bytes > hard || cur > hard - bytes)) {
            *held = cur;
            return false;
        }
    } while (!FM__ATOMIC_CAS_WEAK(&t->pending, &cur, cur + bytes, RELAXED, RELAXED));
    return true;
}

bool fm__tag_charge(fm_tag *tag, uint64_t bytes, const char *kind, const char *name) {
    if (!tag || bytes == 0) return true;
    uint64_t held = 0;
    fm_tag *t = tag;
    for (; t; t = t->desc.parent) {
        if (!fm__tag_take(t, bytes, &held)) break;
    }
    if (t) {
        /* t refused: the tags below it give their share back, and count the
         * refusal with t. */
        for (fm_tag *u = tag; u != t; u = u->desc.parent) {
            FM__ATOMIC_FETCH_SUB(&u->pending, bytes, RELAXED);
            FM__ATOMIC_FETCH_ADD(&u->refused, 1, RELAXED);
        }
        FM__ATOMIC_FETCH_ADD(&t->refused, 1, RELAXED);
        char via[96] = "";
        if (t != tag) snprintf(via, sizeof via, " (the parent chain of tag '%s')", tag->name);
        fm__report(FM_ERR_BUDGET,
                   "%s '%s': growth by %llu bytes refused: tag '%s'%s holds %llu bytes (growths "
                   "under way included) and its hard limit is %llu; nothing changed",
                   kind, name, (unsigned long long)bytes, t->name, via,
                   (unsigned long long)held, (unsigned long long)t->desc.hard_limit_bytes);
        return false;
    }
    return true;
}

void fm__tag_refund(fm_tag *tag, uint64_t bytes) {
    for (fm_tag *t = tag; t && bytes; t = t->desc.parent)
        FM__ATOMIC_FETCH_SUB(&t->pending, bytes, RELAXED);
}

void fm__tag_charged(fm_tag *tag, uint64_t bytes, bool reserves, const char *kind,
                     const char *name) {
    if (!bytes) return;
    for (fm_tag *t = tag; t; t = t->desc.parent) {
        uint64_t before = FM__ATOMIC_FETCH_ADD(&t->committed, bytes, RELAXED);
        uint64_t after = before + bytes;
        if (reserves) FM__ATOMIC_FETCH_ADD(&t->reserved, bytes, RELAXED);
        fm__raise_peak(t, after);
        uint64_t soft = t->desc.soft_limit_bytes;
        if (soft && before <= soft && after > soft) {
            FM__ATOMIC_FETCH_ADD(&t->soft_crossings, 1, RELAXED);
            fm__report(FM_WARN_BUDGET,
                       "tag '%s': %llu bytes committed, above its soft limit %llu (%s '%s' grew "
                       "by %llu bytes; the growth went ahead)",
                       t->name, (unsigned long long)after, (unsigned long long)soft, kind, name,
                       (unsigned long long)bytes);
        }
    }
}

uint64_t fm__tag_room(const fm_tag *tag) {
    uint64_t room = UINT64_MAX;
    for (const fm_tag *t = tag; t; t = t->desc.parent) {
        uint64_t hard = t->desc.hard_limit_bytes;
        if (!hard) continue;
        uint64_t held = FM__ATOMIC_LOAD(&t->pending, RELAXED);
        uint64_t left = held < hard ? hard - held : 0;
        if (left < room) room = left;
    }
    return room;
}

void fm__tag_uncharge(fm_tag *tag, uint64_t bytes, bool reserves) {
    for (fm_tag *t = tag; t && bytes; t = t->desc.parent) {
        FM__ATOMIC_FETCH_SUB(&t->committed, bytes, RELAXED);
        FM__ATOMIC_FETCH_SUB(&t->pending, bytes, RELAXED);
        if (reserves) FM__ATOMIC_FETCH_SUB(&t->reserved, bytes, RELAXED);
    }
}

void fm__tag_reserve(fm_tag *tag, uint64_t bytes) {
    for (fm_tag *t = tag; t; t = t->desc.parent) FM__ATOMIC_FETCH_ADD(&t->reserved, bytes, RELAXED);
}

void fm__tag_unreserve(fm_tag *tag, uint64_t bytes) {
    for (fm_tag *t = tag; t; t = t->desc.parent) FM__ATOMIC_FETCH_SUB(&t->reserved, bytes, RELAXED);
}

/* ================================================================ queries */

/* Live bytes of t's objects and of its children's, parent locked before child. */
static uint64_t fm__tag_live(fm_tag *t) {
    uint64_t live = 0;
    fm__mutex_lock(&t->lock);
    for (fm__tag_link *l = t->members; l; l = l->next) {
        live += l->kind == FM__TAG_POOL ? fm__pool_live_bytes(l->object)
                                        : fm__arena_live_bytes(l->object);
    }
    for (fm_tag *c = t->first_child; c; c = c->next_sibling) live += fm__tag_live(c);
    fm__mutex_unlock(&t->lock);
    return live;
}

void fm_tag_get_stats(const fm_tag *tag, fm_tag_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    FM__REFUSE_NULL(tag, "tag", );
    if (!out) return;
    fm_tag *t = (fm_tag *)tag; /* the lock; nothing else changes */
    out->live = fm__tag_live(t);
    fm__mutex_lock(&t->lock);
    out->objects = t->n_members;
    out->children = t->n_children;
    fm__mutex_unlock(&t->lock);
    out->name = t->name;
    out->reserved = FM__ATOMIC_LOAD(&t->reserved, RELAXED);
    out->committed = FM__ATOMIC_LOAD(&t->committed, RELAXED);
    out->peak = FM__ATOMIC_LOAD(&t->peak, RELAXED);
    out->growths_refused = FM__ATOMIC_LOAD(&t->refused, RELAXED);
    out->soft_crossings = FM__ATOMIC_LOAD(&t->soft_crossings, RELAXED);
    out->soft_limit_bytes = t->desc.soft_limit_bytes;
    out->hard_limit_bytes = t->desc.hard_limit_bytes;
}

fm_tag_desc fm_tag_get_desc(const fm_tag *tag) {
    FM__REFUSE_NULL(tag, "tag", (fm_tag_desc){0});
    return tag->desc;
}

const char *fm_tag_name(const fm_tag *tag) {
    FM__REFUSE_NULL(tag, "tag", "(null)");
    return tag->name;
}
