# Arena suites: included from tests/CMakeLists.txt (paths relative to tests/).
fm_add_test(test_arena memory/test_arena.c memory_arena)
fm_add_test(test_frame_arena memory/test_frame_arena.c memory_frame_arena)
fm_add_test(test_arena_model memory/test_arena_model.c memory_arena_model)
