# Engine suites (tests/engine/).
foreach(suite engine faults null_args files ds)
  fm_add_test(test_eng_${suite} engine/test_${suite}.c engine_${suite})
  target_link_libraries(test_eng_${suite} PRIVATE framemem_engine)
  target_include_directories(test_eng_${suite} PRIVATE ${PROJECT_SOURCE_DIR}/engine/src)
  # Files the suites write (CSV, trace, configs) go to the build tree. Label
  # "engine": tools/dev's TSan configuration leaves them out (see below).
  set_tests_properties(engine_${suite} PROPERTIES
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR} LABELS engine)
endforeach()
# The NULL-object table is checked against the headers under the source tree.
target_compile_definitions(test_eng_null_args PRIVATE FM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# The telemetry-vs-pool-stats check, shared by the engine and fault suites.
foreach(suite engine faults)
  target_sources(test_eng_${suite} PRIVATE engine/eng_test.c)
  target_include_directories(test_eng_${suite} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/engine)
endforeach()

# The engine's sources call only files below them (the order in
# engine/src/eng_internal.h), and fm-tune and fm-plot link without the world.
# Read with the host's nm: the native configurations check it.
if(NOT CMAKE_CROSSCOMPILING)
  set(fm_chain_programs "")
  if(FM_BUILD_TOOLS)
    list(APPEND fm_chain_programs $<TARGET_FILE:fm-tune>)
    if(FM_BUILD_DEMO)
      list(APPEND fm_chain_programs $<TARGET_FILE:fm-plot>)
    endif()
  endif()
  add_test(NAME engine_file_chain
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/engine/check_chain.sh
            ${PROJECT_SOURCE_DIR}/engine/src/eng_internal.h $<TARGET_FILE:framemem_engine>
            ${fm_chain_programs})
endif()

# The engine, the demo and their suites start no thread: tools/dev's TSan
# configuration leaves them out on that ground (label "engine"; the demo is
# not built there). Read with the host's nm, as the chain above.
if(NOT CMAKE_CROSSCOMPILING)
  file(GLOB fm_single_thread_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/engine/*.c
       ${CMAKE_CURRENT_SOURCE_DIR}/demo/*.c)
  set(fm_single_thread_files $<TARGET_FILE:framemem_engine>)
  if(FM_BUILD_DEMO)
    list(APPEND fm_single_thread_files $<TARGET_FILE:framemem-demo> $<TARGET_FILE:framemem-minimal>
         $<TARGET_FILE:framemem_overlay> $<TARGET_FILE:framemem_demo_core>)
  endif()
  add_test(NAME engine_starts_no_thread
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/engine/check_no_threads.sh
            ${fm_single_thread_files} ${fm_single_thread_sources})
endif()
