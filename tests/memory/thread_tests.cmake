# Thread suites (sync policies). They run in every configuration, TSan
# included.
fm_add_test(test_arena_threads memory/test_arena_threads.c memory_arena_threads)
fm_add_test(test_closure_threads memory/test_closure_threads.c memory_closure_threads)
fm_add_test(test_pool_threads memory/test_pool_threads.c memory_pool_threads)
