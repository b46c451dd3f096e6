/*
 * tests/engine/eng_test.h: checks shared by the engine suites.
 */
#ifndef ENG_TEST_H
#define ENG_TEST_H

#include <stdint.h>

#include "engine/engine.h"

#define ENG_TEST_DT (1.0 / 60.0)

/// eng_create that cmocka-asserts success (printing the message otherwise).
eng *eng_test_make(const eng_desc *d);
/// frames x eng_tick at ENG_TEST_DT.
void eng_test_run(eng *e, int frames);
/// cmocka-asserts that the telemetry of every frame since the world was
/// built adds up to each pool's own stats: allocs, frees, growth events (in
/// allocations, ahead) and their time; live, capacity and peak of the newest frame; item size and
/// chunk size; and that each frame's alloc_total_ns is the sum of its
/// sources' alloc_ns. Needs the pool backend, no rebuild since create and a
/// ring holding every frame. Returns the growth events (in allocations and
/// ahead) of all pools.
uint64_t eng_test_assert_telemetry_matches_pools(const eng *e);

#endif /* ENG_TEST_H */
