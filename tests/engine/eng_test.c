/* tests/engine/eng_test.c: checks shared by the engine suites. */
#include "eng_test.h"

#include "fm_test.h"

eng *eng_test_make(const eng_desc *d) {
    char err[512] = "";
    eng *e = eng_create(d, err, sizeof err);
    if (!e) print_error("eng_create: %s\n", err);
    assert_non_null(e);
    return e;
}

void eng_test_run(eng *e, int frames) {
    for (int i = 0; i < frames; i++) eng_tick(e, ENG_TEST_DT);
}

uint64_t eng_test_assert_telemetry_matches_pools(const eng *e) {
    const fm_telemetry *t = eng_get_telemetry(e);
    uint32_t frames = fm_telemetry_frame_count(t);
    assert_int_equal(fm_telemetry_frames_pushed(t), frames); /* the ring holds them all */
    assert_true(frames > 0);
    static const char *const pools[] = {"entities",  "transforms", "velocities",
                                        "lifetimes", "emitters",   "particles"};
    uint64_t all_growth = 0;
    for (size_t k = 0; k < sizeof pools / sizeof pools[0]; k++) {
        int s = fm_telemetry_find_source(t, pools[k]);
        assert_true(s >= 0);
        uint64_t allocs = 0, frees = 0, grow = 0, ahead = 0, grow_ns = 0, ahead_ns = 0;
        for (uint32_t i = 0; i < frames; i++) {
            const fm_telemetry_sample *x = fm_telemetry_get_sample(t, i, (uint32_t)s);
            allocs += x->allocs;
            frees += x->frees;
            grow += x->grow_events;
            ahead += x->ahead_grow_events;
            grow_ns += x->grow_ns;
            ahead_ns += x->ahead_grow_ns;
        }
        const fm_pool *pool = eng_get_pool(e, pools[k]);
        assert_non_null(pool);
        fm_pool_stats st;
        fm_pool_get_stats(pool, &st);
        assert_int_equal(allocs, st.total_allocs);
        assert_int_equal(frees, st.total_frees);
        /* the engine reserves nothing: every growth was in an allocation or ahead */
        assert_int_equal(grow + ahead, st.grow_events);
        assert_int_equal(grow, st.alloc_grow_events);
        assert_int_equal(ahead, st.ahead_grow_events);
        assert_int_equal(grow_ns, st.alloc_grow_ns);
        assert_int_equal(ahead_ns, st.ahead_grow_ns);
        const fm_telemetry_sample *last = fm_telemetry_get_sample(t, frames - 1, (uint32_t)s);
        assert_int_equal(last->live, st.live);
        assert_int_equal(last->capacity, st.capacity);
        assert_int_equal(last->peak_live, st.peak_live);
        assert_int_equal(fm_telemetry_get_source(t, (uint32_t)s)->item_size, st.stride);
        assert_int_equal(fm_telemetry_get_source(t, (uint32_t)s)->chunk_items, st.items_per_chunk);
        all_growth += grow + ahead;
    }
    for (uint32_t i = 0; i < frames; i++) {
        uint64_t sum = 0;
        for (uint32_t s = 0; s < fm_telemetry_source_count(t); s++)
            sum += fm_telemetry_get_sample(t, i, s)->alloc_ns;
        assert_int_equal(fm_telemetry_get_frame(t, i)->alloc_total_ns, sum);
    }
    return all_growth;
}
