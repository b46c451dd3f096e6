/*
 * tests/support/fm_test_alloc.h: the counting, fault-injecting fm_allocator
 * of every test: the unit suites, the thread suites and the fuzzers.
 *
 * - Counts: live bytes and blocks (zero after destroy proves that every
 *   backing byte came back), the peak, alloc, failed and free calls.
 * - Checks the contract: free gets back the pointer and size alloc gave, an
 *   alignment is a power of two. A violation is counted in `errors` with a
 *   message in `last_problem` (printed to stderr); with abort_on_problem set
 *   (the fuzzers) it aborts, which libFuzzer turns into a reproducer.
 * - Refuses on request: the nth call from now (fm_test_allocator_fail_nth),
 *   every call from the nth on (fail_from), any block above max_block, any
 *   block that would take live bytes past max_live. Each refusal counts in
 *   failed_calls. A request above fatal_above is a violation (a library bug,
 *   such as a block larger than an arena's reserve).
 * - Fills fresh blocks with 0xA5 (garbage, not zeros: code that relies on
 *   fresh memory being zero fails): every byte, or with fill_limit set the
 *   first fill_limit bytes and the last page (where big blocks keep their
 *   headers; filling every page of a big block made page faults the main
 *   cost of a fuzzing run).
 * - With `cache` set, freed blocks of 4 KiB and more are kept, poisoned for
 *   ASan (a later access by the library is still a report), and handed out
 *   again for the same size and alignment; the cache survives
 *   fm_test_allocator_reset (the fuzzers reset once per input).
 * - Alignments above 1 MiB (pool chunks of big items) come from mmap: some
 *   heaps (Valgrind's replacement malloc) cannot serve them.
 * - Thread-safe: every call takes the allocator's mutex. `hook`, when set,
 *   runs at the start of every alloc call before the lock is taken (a thread
 *   suite holds a thread inside the backing call with it). Read the counters
 *   after joining the threads that use the allocator.
 *
 * No cmocka here (the fuzzers link this alone); fm_test.h adds the cmocka
 * assertion fm_test_allocator_assert_clean.
 */
#ifndef FM_TEST_ALLOC_H
#define FM_TEST_ALLOC_H

#include "fm_test_thread.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "framemem/base.h"

typedef struct fm_test_block {
    void *ptr;
    size_t size;
    size_t align;
} fm_test_block;

enum { FM_TEST_CACHE_BLOCKS = 256 };

typedef struct fm_test_allocator {
    /* counters, readable by tests */
    size_t live_bytes;     /* bytes handed out and not yet freed */
    size_t live_blocks;    /* blocks handed out and not yet freed */
    size_t peak_bytes;     /* highest live_bytes */
    uint64_t alloc_calls;  /* backing alloc calls, refused ones included */
    uint64_t failed_calls; /* alloc calls that returned NULL (injected, over a limit) */
    uint64_t free_calls;   /* backing free calls */
    uint64_t errors;       /* contract violations seen (bad size, align, ptr) */
    char last_problem[256];

    /* fault injection: calls are numbered from the arming call (1 = next) */
    uint64_t fail_at;      /* alloc_calls value that fails; 0 = never */
    bool fail_after;       /* also fail every call after fail_at */

    /* limits (0 = none); fm_test_allocator_reset clears them */
    size_t max_block;      /* bigger requests are refused */
    size_t max_live;       /* requests that would pass this many live bytes are refused */
    size_t fatal_above;    /* a bigger request is a contract violation */

    /* behaviour, kept by fm_test_allocator_reset */
    bool abort_on_problem; /* a contract violation prints and aborts */
    size_t fill_limit;     /* 0: fill every byte of a fresh block; else see above */
    bool cache;            /* keep freed blocks for reuse (see above) */
    void (*hook)(struct fm_test_allocator *a); /* runs first in every alloc, unlocked */
    void *hook_user;

    /* registry of live blocks (newest last) */
    fm_test_block *blocks;
    size_t block_count;
    size_t block_cap;

    /* internals */
    fm_test_mutex lock;
    fm_test_block cached[FM_TEST_CACHE_BLOCKS];
    size_t cached_count, cached_bytes;
} fm_test_allocator;

/// size bytes aligned to align (a power of two, at least sizeof(void *)) from
/// the C heap; freed by fm_test_aligned_free.
void *fm_test_aligned_alloc(size_t align, size_t size);
void fm_test_aligned_free(void *p);

/// Zeroes every counter and switch and sets up the lock; call once before use.
void fm_test_allocator_init(fm_test_allocator *a);
/// Frees every block still live (a failed test's leftovers), the cache, the
/// registry and the lock; init again before another use.
void fm_test_allocator_release(fm_test_allocator *a);
/// Frees the leftovers and starts counting afresh: counters, fault injection
/// and limits cleared; the switches (abort_on_problem, fill_limit, cache,
/// hook), the registry's storage and the cache are kept.
void fm_test_allocator_reset(fm_test_allocator *a);
/// The fm_allocator to put in a desc; a must outlive every object using it.
fm_allocator fm_test_allocator_get(fm_test_allocator *a);
/// Fails only the nth backing alloc call from now (1 = the next call).
void fm_test_allocator_fail_nth(fm_test_allocator *a, uint64_t n);
/// Fails the nth backing alloc call from now and every call after it.
void fm_test_allocator_fail_from(fm_test_allocator *a, uint64_t n);
/// Disarms fault injection.
void fm_test_allocator_recover(fm_test_allocator *a);
/// true when nothing is live and no contract violation was seen.
bool fm_test_allocator_clean(fm_test_allocator *a);

#endif /* FM_TEST_ALLOC_H */
