/* event.c: multicast events, calling their subscribers' closures in
 * subscription order.
 *
 * Subscribers live in an array in subscription order; a handle names a slot
 * (with a generation) that points into it, so unsubscribing is O(n) in the
 * subscribers after it and never searches. During an emit a removal only
 * marks the entry dead: it is skipped, and released when the outermost emit
 * ends (its closure may be the one running).
 *
 * Threads: under MUTEX the lock guards the arrays and is released while a
 * subscriber runs, so callbacks may subscribe, unsubscribe and emit (the
 * lock is never held across a call, so no recursive lock is needed).
 */
#include "framemem/closure.h"

#include "framemem/clock.h"
#include "internal.h"
#include "platform/thread.h"

#include <string.h>

typedef struct fm__sub {
    fm_closure *c;
    uint32_t slot; /* in fm_event.slots */
    bool dead;     /* unsubscribed during an emit; removed when it ends */
} fm__sub;

/* A subscription slot's generation counts its uses: odd while in use, even
 * while free. The handle carries it, so a handle is stale once its
 * subscription ends. A slot whose generation reaches the event's gen_max (odd)
 * is retired at that unsubscribe, never to be used again: a wrap would bring
 * back the generations of long-stale handles, which would then unsubscribe a
 * stranger (pools retire a slot at generation wrap likewise). New
 * subscriptions take new slots; when slots_max slots are in use or retired,
 * subscribe fails (FM_ERR_POOL_FULL). At the full 32 bits that takes 2^31
 * subscriptions on each of 2^32 - 1 slots: never, in practice. */
#define FM__EV_GEN_MAX UINT32_MAX
#define FM__EV_SLOTS_MAX (UINT32_MAX - 1u) /* a handle's low word is slot + 1, never 0 */

typedef struct fm__sub_slot {
    uint32_t gen;  /* odd while in use; even while free or retired */
    uint32_t pos;  /* index in subs while in use; next free slot while free */
} fm__sub_slot;

struct fm_event {
    fm__sub *subs;
    uint32_t n_subs, subs_cap;
    fm__sub_slot *slots;
    uint32_t n_slots, slots_cap, free_slot;
    uint32_t live;
    uint32_t retired;  /* slots retired at their last generation */
    uint32_t gen_max;  /* a slot's last generation (FM__EV_GEN_MAX; tests lower it) */
    uint32_t slots_max; /* slots that may ever exist (FM__EV_SLOTS_MAX; tests lower it) */
    uint32_t emitting; /* emits under way, on any thread */
    uint32_t salt; /* xored into handles: another event's handles do not match */
    bool dirty;
    fm_sync sync;
    fm__mutex lock; /* MUTEX: around everything but the callbacks */
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

static void fm__event_lock(const fm_event *ev) {
    if (ev->sync != FM_SYNC_NONE) fm__mutex_lock((fm__mutex *)&ev->lock);
}
static void fm__event_unlock(const fm_event *ev) {
    if (ev->sync != FM_SYNC_NONE) fm__mutex_unlock((fm__mutex *)&ev->lock);
}

static void fm__event_free(fm_event *ev) {
    fm_allocator a = ev->allocator;
    fm__mutex_destroy(&ev->lock);
    fm_allocator_free(&a, ev->subs, (size_t)ev->subs_cap * sizeof *ev->subs);
    fm_allocator_free(&a, ev->slots, (size_t)ev->slots_cap * sizeof *ev->slots);
    fm_allocator_free(&a, ev, ev->self_bytes);
}

fm_event *fm_event_create(const fm_event_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "event: fm_event_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "event");
    const char *why = fm__sync_problem(desc->sync, false, false);
    if (!why && !fm_allocator_valid(&desc->allocator))
        why = "allocator needs both alloc and free";
    if (why) {
        fm__report(FM_ERR_INVALID_ARG, "event '%s': %s", name, why);
        return NULL;
    }
    size_t self_bytes;
    fm_event *ev = FM__OBJECT_NEW(fm_event, &desc->allocator, "event", name, &self_bytes);
    if (!ev) return NULL;
    ev->self_bytes = self_bytes;
    ev->allocator = desc->allocator;
    ev->sync = desc->sync;
    fm__mutex_init(&ev->lock, false);
    ev->free_slot = UINT32_MAX;
    ev->gen_max = FM__EV_GEN_MAX;
    ev->slots_max = FM__EV_SLOTS_MAX;
    ev->salt = (uint32_t)((((uint64_t)(uintptr_t)ev ^ fm_clock_now()) * 0x9E3779B97F4A7C15ull) >> 32);
    uint32_t cap = fm__def(desc->initial_capacity, 8u);
    if (!fm__grow_array(&ev->allocator, (void **)&ev->subs, &ev->subs_cap, cap, sizeof *ev->subs) ||
        !fm__grow_array(&ev->allocator, (void **)&ev->slots, &ev->slots_cap, cap, sizeof *ev->slots)) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "event '%s': no memory for %u subscribers", name, cap);
        fm__event_free(ev);
        return NULL;
    }
    return ev;
}

void fm_event_destroy(fm_event *ev) {
    if (!ev) return;
    fm__event_lock(ev);
    if (ev->emitting) {
        fm__event_unlock(ev);
        fm__report(FM_ERR_INVALID_ARG, "event '%s': destroyed during an emit", ev->name);
        return;
    }
    for (uint32_t i = 0; i < ev->n_subs; i++) fm_closure_release(ev->subs[i].c);
    fm__event_unlock(ev);
    fm__event_free(ev);
}

void fm__event_set_limits(fm_event *ev, uint32_t gen_bits, uint32_t slots_max) {
    if (gen_bits >= 2 && gen_bits <= 32) ev->gen_max = (uint32_t)(((uint64_t)1 << gen_bits) - 1u);
    if (slots_max && slots_max <= FM__EV_SLOTS_MAX) ev->slots_max = slots_max;
}

static fm_handle fm__event_subscribe_locked(fm_event *ev, fm_closure *c) {
    uint32_t slot = ev->free_slot;
    if (slot == UINT32_MAX && ev->n_slots >= ev->slots_max) {
        fm__report(FM_ERR_POOL_FULL,
                   "event '%s': subscribe: all %u subscription slots are in use or retired "
                   "(%u retired at their last generation)",
                   ev->name, ev->n_slots, ev->retired);
        return FM_HANDLE_NULL;
    }
    if (!fm__closure_take(c)) return FM_HANDLE_NULL; /* reported */
    if (!fm__grow_array(&ev->allocator, (void **)&ev->subs, &ev->subs_cap, ev->n_subs + 1,
                        sizeof *ev->subs) ||
        (slot == UINT32_MAX &&
         !fm__grow_array(&ev->allocator, (void **)&ev->slots, &ev->slots_cap, ev->n_slots + 1,
                         sizeof *ev->slots))) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "event '%s': no memory for another subscriber", ev->name);
        fm_closure_release(c);
        return FM_HANDLE_NULL;
    }
    if (slot == UINT32_MAX) {
        slot = ev->n_slots++;
        ev->slots[slot].gen = 0;
    } else {
        ev->free_slot = ev->slots[slot].pos;
    }
    fm__sub_slot *s = &ev->slots[slot];
    s->gen++; /* odd: in use */
    s->pos = ev->n_subs;
    ev->subs[ev->n_subs++] = (fm__sub){c, slot, false};
    ev->live++;
    return (fm_handle){(uint64_t)(s->gen ^ ev->salt) << 32 | (slot + 1u)};
}

fm_handle fm_event_subscribe(fm_event *ev, fm_closure *c) {
    FM__REFUSE_NULL(ev, "event", FM_HANDLE_NULL);
    if (!c) {
        fm__report(FM_ERR_INVALID_ARG, "event '%s': subscribe(NULL)", ev->name);
        return FM_HANDLE_NULL;
    }
    fm__event_lock(ev);
    fm_handle h = fm__event_subscribe_locked(ev, c);
    fm__event_unlock(ev);
    return h;
}

static bool fm__event_unsubscribe_locked(fm_event *ev, fm_handle sub) {
    uint32_t slot = (uint32_t)sub.bits - 1u, gen = (uint32_t)(sub.bits >> 32) ^ ev->salt;
    if (slot >= ev->n_slots || ev->slots[slot].gen != gen || !(gen & 1u)) {
        fm__report(FM_ERR_STALE_HANDLE, "event '%s': unsubscribe of an unknown or removed subscription",
                   ev->name);
        return false;
    }
    fm__sub_slot *s = &ev->slots[slot];
    fm__sub *e = &ev->subs[s->pos];
    if (s->gen == ev->gen_max) {
        ev->retired++; /* its generation is spent: never used again */
    } else {
        s->pos = ev->free_slot;
        ev->free_slot = slot;
    }
    s->gen++; /* even (retired: 0 or gen_max + 1): the handle is stale from now on */
    ev->live--;
    if (ev->emitting) {
        /* Not called again in this emit; its closure may be running now, so
         * it is released when the outermost emit ends. */
        e->dead = true;
        ev->dirty = true;
        return true;
    }
    fm_closure *c = e->c;
    uint32_t pos = (uint32_t)(e - ev->subs);
    memmove(e, e + 1, (size_t)(ev->n_subs - pos - 1) * sizeof *e);
    ev->n_subs--;
    for (uint32_t i = pos; i < ev->n_subs; i++) ev->slots[ev->subs[i].slot].pos = i;
    fm_closure_release(c);
    return true;
}

bool fm_event_unsubscribe(fm_event *ev, fm_handle sub) {
    FM__REFUSE_NULL(ev, "event", false);
    fm__event_lock(ev);
    bool ok = fm__event_unsubscribe_locked(ev, sub);
    fm__event_unlock(ev);
    return ok;
}

static void fm__event_compact(fm_event *ev) {
    uint32_t out = 0;
    for (uint32_t i = 0; i < ev->n_subs; i++) {
        fm__sub e = ev->subs[i];
        if (e.dead) {
            fm_closure_release(e.c);
            continue;
        }
        ev->slots[e.slot].pos = out;
        ev->subs[out++] = e;
    }
    ev->n_subs = out;
    ev->dirty = false;
}

void fm_event_emit(fm_event *ev, void *arg) {
    FM__REFUSE_NULL(ev, "event", );
    fm__event_lock(ev);
    uint32_t n = ev->n_subs; /* subscribers added during the emit wait for the next */
    ev->emitting++;
    for (uint32_t i = 0; i < n; i++) {
        fm__sub e = ev->subs[i]; /* re-read: a subscribe may move the array */
        if (e.dead) continue;
        /* No lock across the call: the callback may use this event, and a
         * subscriber removed meanwhile stays alive until the emits end. */
        fm__event_unlock(ev);
        fm_closure_call(e.c, arg);
        fm__event_lock(ev);
    }
    if (--ev->emitting == 0 && ev->dirty) fm__event_compact(ev);
    fm__event_unlock(ev);
}

uint32_t fm_event_count(const fm_event *ev) {
    FM__REFUSE_NULL(ev, "event", 0);
    fm__event_lock(ev);
    uint32_t live = ev->live;
    fm__event_unlock(ev);
    return live;
}
