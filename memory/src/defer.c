/* defer.c: deferred calls, closures run a number of frames later in the
 * order deferred.
 *
 * Threads: under MUTEX the lock guards the array; under LOCKFREE fm_defer
 * pushes into a bounded inbox (Vyukov's sequence-numbered ring,
 * multi-producer) that fm_defer_run drains under the lock, and a push that
 * finds the inbox full drains it itself, under the lock, before appending:
 * each thread's defers keep their order.
 */
#include "framemem/closure.h"

#include "internal.h"
#include "platform/thread.h"

#include <string.h>

typedef struct fm__deferred {
    fm_closure *c;
    uint64_t due;
} fm__deferred;

/* LOCKFREE inbox cell: seq == index when free for the push at that index,
 * index + 1 once that push has published its entry. */
typedef struct fm__inbox_cell {
    size_t seq;
    fm__deferred d;
} fm__inbox_cell;

struct fm_defer_queue {
    fm__deferred *items;
    uint32_t n, cap;
    uint64_t frame; /* read by pushes on any thread */
    bool running;
    fm_sync sync;
    fm__mutex lock; /* MUTEX, LOCKFREE: items, n, running, draining */
    /* LOCKFREE */
    fm__inbox_cell *inbox;
    size_t inbox_mask;
    size_t inbox_head; /* next push */
    size_t inbox_tail;         /* next drain (under the lock) */
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

static void fm__queue_lock(fm_defer_queue *q) {
    if (q->sync != FM_SYNC_NONE) fm__mutex_lock(&q->lock);
}
static void fm__queue_unlock(fm_defer_queue *q) {
    if (q->sync != FM_SYNC_NONE) fm__mutex_unlock(&q->lock);
}

static void fm__defer_queue_free(fm_defer_queue *q) {
    fm_allocator a = q->allocator;
    fm__mutex_destroy(&q->lock);
    if (q->inbox) fm_allocator_free(&a, q->inbox, (q->inbox_mask + 1) * sizeof *q->inbox);
    fm_allocator_free(&a, q->items, (size_t)q->cap * sizeof *q->items);
    fm_allocator_free(&a, q, q->self_bytes);
}

fm_defer_queue *fm_defer_queue_create(const fm_defer_queue_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue: fm_defer_queue_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "defer");
    const char *why = fm__sync_problem(desc->sync, false, true);
    if (!why && !fm_allocator_valid(&desc->allocator))
        why = "allocator needs both alloc and free";
    if (why) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': %s", name, why);
        return NULL;
    }
    size_t self_bytes;
    fm_defer_queue *q =
        FM__OBJECT_NEW(fm_defer_queue, &desc->allocator, "defer queue", name, &self_bytes);
    if (!q) return NULL;
    q->self_bytes = self_bytes;
    q->allocator = desc->allocator;
    q->sync = desc->sync;
    fm__mutex_init(&q->lock, false);
    uint32_t cap = fm__def(desc->initial_capacity, 64u);
    bool ok = fm__grow_array(&q->allocator, (void **)&q->items, &q->cap, cap, sizeof *q->items);
    if (ok && q->sync == FM_SYNC_LOCKFREE) {
        size_t cells = 2;
        while (cells < cap && cells < ((size_t)1 << 30)) cells *= 2;
        q->inbox = fm_allocator_alloc(&q->allocator, cells * sizeof *q->inbox, alignof(fm__inbox_cell));
        if (q->inbox) {
            q->inbox_mask = cells - 1;
            for (size_t i = 0; i < cells; i++) FM__ATOMIC_STORE(&q->inbox[i].seq, i, RELAXED);
        }
        ok = q->inbox != NULL;
    }
    if (!ok) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "defer queue '%s': no memory for its entries", name);
        fm__defer_queue_free(q);
        return NULL;
    }
    return q;
}

/* LOCKFREE: moves inbox entries to items, oldest first, while items can
 * hold them. Under the lock (the inbox has one consumer at a time). A run
 * stops at an entry still being written; `all` waits for every push that
 * had reserved a cell when it started (a push publishes right after it
 * reserves, without blocking), so an entry appended to items next cannot
 * pass an earlier one of the same thread. */
static void fm__inbox_drain(fm_defer_queue *q, bool all) {
    if (!q->inbox) return;
    size_t head = FM__ATOMIC_LOAD(&q->inbox_head, ACQUIRE);
    for (;;) {
        fm__inbox_cell *cell = &q->inbox[q->inbox_tail & q->inbox_mask];
        if (FM__ATOMIC_LOAD(&cell->seq, ACQUIRE) != q->inbox_tail + 1) {
            /* Pushes may refill drained cells meanwhile: the tail can pass head. */
            if (!all || q->inbox_tail >= head) return;
            fm__thread_yield();
            continue;
        }
        if (!fm__grow_array(&q->allocator, (void **)&q->items, &q->cap, q->n + 1, sizeof *q->items))
            return; /* stays in the inbox until items can grow */
        q->items[q->n++] = cell->d;
        FM__ATOMIC_STORE(&cell->seq, q->inbox_tail + q->inbox_mask + 1, RELEASE);
        q->inbox_tail++;
    }
}

/* LOCKFREE: publishes d in the inbox; false when it is full. */
static bool fm__inbox_push(fm_defer_queue *q, fm__deferred d) {
    size_t pos = FM__ATOMIC_LOAD(&q->inbox_head, RELAXED);
    for (;;) {
        fm__inbox_cell *cell = &q->inbox[pos & q->inbox_mask];
        size_t seq = FM__ATOMIC_LOAD(&cell->seq, ACQUIRE);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            if (FM__ATOMIC_CAS_WEAK(&q->inbox_head, &pos, pos + 1, RELAXED, RELAXED)) {
                cell->d = d;
                FM__ATOMIC_STORE(&cell->seq, pos + 1, RELEASE);
                return true;
            }
        } else if (dif < 0) {
            return false; /* full: the cell still holds an entry from a lap ago */
        } else {
            pos = FM__ATOMIC_LOAD(&q->inbox_head, RELAXED);
        }
    }
}

void fm_defer_queue_destroy(fm_defer_queue *q) {
    if (!q) return;
    fm__queue_lock(q);
    if (q->running) {
        fm__queue_unlock(q);
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': destroyed during its run", q->name);
        return;
    }
    for (uint32_t i = 0; i < q->n; i++) fm_closure_release(q->items[i].c);
    if (q->inbox) {
        /* Entries items could not take (no memory) are still references. */
        for (; FM__ATOMIC_LOAD(&q->inbox[q->inbox_tail & q->inbox_mask].seq, ACQUIRE) ==
               q->inbox_tail + 1;
             q->inbox_tail++)
            fm_closure_release(q->inbox[q->inbox_tail & q->inbox_mask].d.c);
    }
    fm__queue_unlock(q);
    fm__defer_queue_free(q);
}

bool fm_defer(fm_defer_queue *q, fm_closure *c, uint32_t delay_frames) {
    FM__REFUSE_NULL(q, "defer queue", false);
    if (!c) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': defer(NULL)", q->name);
        return false;
    }
    if (!fm__closure_take(c)) return false; /* reported */
    fm__deferred d = {c, FM__ATOMIC_LOAD(&q->frame, ACQUIRE) + 1 + delay_frames};
    if (q->inbox && fm__inbox_push(q, d)) return true;
    fm__queue_lock(q);
    /* LOCKFREE with a full inbox: what it holds was deferred first. */
    fm__inbox_drain(q, true);
    bool ok = fm__grow_array(&q->allocator, (void **)&q->items, &q->cap, q->n + 1, sizeof *q->items);
    if (ok) q->items[q->n++] = d;
    fm__queue_unlock(q);
    if (!ok) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "defer queue '%s': no memory for another entry", q->name);
        fm_closure_release(c);
    }
    return ok;
}

uint32_t fm_defer_run(fm_defer_queue *q) {
    FM__REFUSE_NULL(q, "defer queue", 0);
    fm__queue_lock(q);
    if (q->running) {
        fm__queue_unlock(q);
        fm__report(FM_ERR_INVALID_ARG,
                   "defer queue '%s': run while a run is under way (from inside it, or on another "
                   "thread)",
                   q->name);
        return 0;
    }
    fm__inbox_drain(q, false);
    uint64_t frame = FM__ATOMIC_LOAD(&q->frame, RELAXED) + 1;
    FM__ATOMIC_STORE(&q->frame, frame, RELEASE);
    uint32_t n = q->n, ran = 0; /* entries added while running wait */
    q->running = true;
    for (uint32_t i = 0; i < n; i++) {
        fm__deferred d = q->items[i]; /* re-read: a defer may move the array */
        if (d.due > frame) continue;
        q->items[i].c = NULL;
        fm__queue_unlock(q);
        fm_closure_call(d.c, NULL);
        fm_closure_release(d.c);
        fm__queue_lock(q);
        ran++;
    }
    q->running = false;
    uint32_t out = 0;
    for (uint32_t i = 0; i < q->n; i++) {
        if (q->items[i].c) q->items[out++] = q->items[i];
    }
    q->n = out;
    fm__queue_unlock(q);
    return ran;
}

uint32_t fm_defer_pending(const fm_defer_queue *q) {
    FM__REFUSE_NULL(q, "defer queue", 0);
    fm_defer_queue *m = (fm_defer_queue *)q;
    fm__queue_lock(m);
    uint32_t n = q->n;
    if (q->inbox) {
        size_t head = FM__ATOMIC_LOAD(&q->inbox_head, ACQUIRE);
        n += (uint32_t)(head - q->inbox_tail); /* reserved pushes count as waiting */
    }
    fm__queue_unlock(m);
    return n;
}
