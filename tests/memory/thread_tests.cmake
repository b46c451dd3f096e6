# Thread suites (sync policies): included from tests/CMakeLists.txt (paths
# relative to tests/). They run in every configuration, TSan included.
fm_add_test(test_arena_threads memory/test_arena_threads.c memory_arena_threads)
fm_add_test(test_closure_threads memory/test_closure_threads.c memory_closure_threads)
fm_add_test(test_pool_threads memory/test_pool_threads.c memory_pool_threads)

# Every byte through the desc's fm_allocator. On Linux the library's own calls
# of the C heap are counted too: the linker routes them through the test's
# wrappers (see its opening comment). Not in static executables, where libc's
# own calls go through the same symbols (thread creation allocates each
# thread's TLS vector) and would count as the library's.
fm_add_test(test_pool_backing memory/test_pool_backing.c memory_pool_backing)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT CMAKE_EXE_LINKER_FLAGS MATCHES "(^| )-static( |$)")
  target_compile_definitions(test_pool_backing PRIVATE FM_TEST_WRAP_HEAP)
  target_link_options(test_pool_backing PRIVATE
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=posix_memalign,--wrap=aligned_alloc)
endif()
