# Demo suites (tests/demo/): the overlay library's, then the program's.
if(FM_BUILD_DEMO)
  fm_add_test(test_overlay_draw demo/test_overlay_draw.c demo_overlay_draw)
  target_link_libraries(test_overlay_draw PRIVATE framemem_overlay)
  fm_add_test(test_overlay demo/test_overlay.c demo_overlay)
  target_link_libraries(test_overlay PRIVATE framemem_overlay)
  fm_add_test(test_demo_options demo/test_demo_options.c demo_options)
  target_link_libraries(test_demo_options PRIVATE framemem_demo_core)
  fm_add_test(test_scene_draw demo/test_scene_draw.c demo_scene_draw)
  target_link_libraries(test_scene_draw PRIVATE framemem_demo_core)
  fm_add_test(test_run_stats demo/test_run_stats.c demo_run_stats)
  target_link_libraries(test_run_stats PRIVATE framemem_demo_core)
  fm_add_test(test_hud demo/test_hud.c demo_hud)
  target_link_libraries(test_hud PRIVATE framemem_demo_core)
  fm_add_test(test_compare demo/test_compare.c demo_compare)
  target_link_libraries(test_compare PRIVATE framemem_demo_core)

  # The program itself, run as a child process (headless; no display needed).
  # The trace check parses JSON with python3 (tools/dev installs it); without
  # it that check fails with a message saying so.
  find_program(FM_PYTHON3 python3)
  if(NOT FM_PYTHON3)
    set(FM_PYTHON3 "")
    message(STATUS "demo_run: python3 not found; its trace JSON check will fail (tools/dev installs python3)")
  endif()
  find_program(FM_XVFB_RUN xvfb-run)
  fm_add_test(test_demo_run demo/test_demo_run.c demo_run)
  target_link_libraries(test_demo_run PRIVATE framemem_overlay)
  target_compile_definitions(test_demo_run PRIVATE
    DEMO_EXE="$<TARGET_FILE:framemem-demo>"
    PYTHON3="${FM_PYTHON3}"
    TEST_OUT_DIR="${CMAKE_CURRENT_BINARY_DIR}/demo-out"
    XVFB_RUN="${FM_XVFB_RUN}")
  add_dependencies(test_demo_run framemem-demo)
  set_tests_properties(demo_run PROPERTIES TIMEOUT 600)

  # A real window under Xvfb (tools/dev installs xvfb; the test installs nothing).
  if(FM_XVFB_RUN)
    add_test(NAME demo_xvfb_window COMMAND test_demo_run xvfb)
    set_tests_properties(demo_xvfb_window PROPERTIES TIMEOUT 300)
  else()
    message(STATUS "demo_xvfb_window not registered: xvfb-run not found (tools/dev installs xvfb)")
  endif()

  # framemem-minimal (demo/minimal): run headless, tuned with fm-tune, rerun.
  if(FM_BUILD_TOOLS)
    add_test(NAME demo_minimal_tune_and_rerun
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/demo/check_minimal.sh
              $<TARGET_FILE:framemem-minimal> $<TARGET_FILE:fm-tune>)
    set_tests_properties(demo_minimal_tune_and_rerun PROPERTIES TIMEOUT 300)
  endif()
endif()
