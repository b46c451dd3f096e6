# Thread suites (sync policies). They run in every configuration, TSan
# included.
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
elseif(MINGW)
  # The C runtime is a DLL: only calls from the statically linked code (the
  # library, libgcc's emulated TLS, mingw-w64's own) are routed, which is
  # what the test counts. The library's heap there is _aligned_malloc, which
  # mingw-w64's headers declare dllimport: its calls go through
  # __imp__aligned_malloc, which --wrap does not see, so the library's two
  # functions around it are wrapped instead.
  target_compile_definitions(test_pool_backing PRIVATE FM_TEST_WRAP_HEAP)
  target_link_options(test_pool_backing PRIVATE
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=fm__os_heap_alloc,--wrap=fm__os_heap_free)
endif()

# The thread suites carry the label "threads" (tools/dev repeats them in the
# cross configurations). Windows runs each twice: with CreateThread threads
# and with the C runtime's (_beginthreadex), see tests/support/fm_test_thread.h.
set(fm_thread_suites arena_threads closure_threads pool_threads pool_backing)
foreach(suite ${fm_thread_suites})
  set_tests_properties(memory_${suite} PROPERTIES LABELS threads)
  if(WIN32)
    add_test(NAME memory_${suite}_crt COMMAND test_${suite})
    set_tests_properties(memory_${suite}_crt PROPERTIES
      LABELS threads TIMEOUT 120 ENVIRONMENT FM_TEST_THREADS=crt)
  endif()
endforeach()
# pool_reset, pool_of, hooks and pool_timing (tests/CMakeLists.txt) have
# thread cases too (a reset while threads hold cached slots or resolve,
# lookups while threads churn pools, hook order and hook replacement under
# threads, timing sums of threads on a shared pool): in the cross
# configurations those cases alone (FM_TEST_FILTER) join the label, both ways
# on Windows; the suites' other cases run once, as every suite does (natively
# the whole suite once is the run).
if(CMAKE_CROSSCOMPILING)
  foreach(suite pool_reset pool_of hooks pool_timing)
    set(kinds win32)
    if(WIN32)
      list(APPEND kinds crt)
    endif()
    foreach(kind ${kinds})
      set(name memory_${suite}_threads)
      if(kind STREQUAL crt)
        set(name ${name}_crt)
      endif()
      add_test(NAME ${name} COMMAND test_${suite})
      # A filter matching no case (a case renamed) fails instead of passing.
      set_tests_properties(${name} PROPERTIES LABELS threads TIMEOUT 120
        ENVIRONMENT "FM_TEST_FILTER=*threads*;FM_TEST_THREADS=${kind}"
        FAIL_REGULAR_EXPRESSION "\\] 0 test\\(s\\) run")
    endforeach()
  endforeach()
endif()
