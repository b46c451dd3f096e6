# tools/: fm-bench's smoke run, fm-tune and fm-plot (tests/tools/).
# tests/ is configured before tools/, so the targets are named, not tested for.
if(FM_BUILD_TOOLS)
  if(FM_SANITIZE)
    set(fm_bench_libc 0) # the sanitizer runtime provides malloc
  else()
    set(fm_bench_libc 1)
  endif()
  add_test(NAME tools_fm_bench_quick
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_bench.sh
            $<TARGET_FILE:fm-bench> ${fm_bench_libc})
  set_tests_properties(tools_fm_bench_quick PROPERTIES TIMEOUT 600)
endif()

# fm-tune: pool capacities from the CSVs in tools/data.
if(FM_BUILD_TOOLS)
  add_test(NAME tools_fm_tune
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_tune.sh
            $<TARGET_FILE:fm-tune> ${CMAKE_CURRENT_SOURCE_DIR}/tools/data)
  set_tests_properties(tools_fm_tune PROPERTIES TIMEOUT 120)
endif()

# fm-plot needs the demo's overlay library (SDL2, stb).
if(FM_BUILD_TOOLS AND FM_BUILD_DEMO)
  fm_add_test(test_fm_plot tools/test_fm_plot.c tools_fm_plot)
  target_link_libraries(test_fm_plot PRIVATE framemem_overlay)
  target_compile_definitions(test_fm_plot PRIVATE
    FM_PLOT="$<TARGET_FILE:fm-plot>"
    FM_DATA="${CMAKE_CURRENT_SOURCE_DIR}/tools/data")
  add_dependencies(test_fm_plot fm-plot)
endif()

# tools/dev's apt-get calls (a fake apt-get; the real locks are not touched).
# A host script: the native configurations run it.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME tools_dev_apt
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_dev_apt.sh ${PROJECT_SOURCE_DIR}/tools/dev)
  set_tests_properties(tools_dev_apt PROPERTIES TIMEOUT 120 LABELS once)
endif()
