# Arena suites.
fm_add_test(test_arena memory/test_arena.c memory_arena)
fm_add_test(test_frame_arena memory/test_frame_arena.c memory_frame_arena)
fm_add_test(test_arena_model memory/test_arena_model.c memory_arena_model)
fm_add_test(test_arena_huge memory/test_arena_huge.c memory_arena_huge)
# The same suites against shared arenas (every single-threaded behaviour
# holds under MUTEX and LOCKFREE too).
foreach(sync mutex lockfree)
  add_test(NAME memory_arena_${sync} COMMAND test_arena ${sync})
  add_test(NAME memory_frame_arena_${sync} COMMAND test_frame_arena ${sync})
  add_test(NAME memory_arena_huge_${sync} COMMAND test_arena_huge ${sync})
  set_tests_properties(memory_arena_${sync} memory_frame_arena_${sync} memory_arena_huge_${sync}
                       PROPERTIES TIMEOUT 120)
endforeach()
