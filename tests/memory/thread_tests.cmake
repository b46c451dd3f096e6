# Thread suites (sync policies): included from tests/CMakeLists.txt (paths
# relative to tests/). They run in every configuration, TSan included.
fm_add_test(test_arena_threads memory/test_arena_threads.c memory_arena_threads)
