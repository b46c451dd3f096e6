# Engine suites (tests/engine/).
foreach(suite telemetry config engine faults null_args files ds)
  fm_add_test(test_eng_${suite} engine/test_${suite}.c engine_${suite})
  target_link_libraries(test_eng_${suite} PRIVATE framemem_engine)
  target_include_directories(test_eng_${suite} PRIVATE ${PROJECT_SOURCE_DIR}/engine/src)
  # Files the suites write (CSV, trace, configs) go to the build tree.
  set_tests_properties(engine_${suite} PROPERTIES
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endforeach()
# The NULL-object table is checked against the headers under the source tree.
target_compile_definitions(test_eng_null_args PRIVATE FM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# The telemetry-vs-pool-stats check, shared by the engine and fault suites.
foreach(suite engine faults)
  target_sources(test_eng_${suite} PRIVATE engine/eng_test.c)
  target_include_directories(test_eng_${suite} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/engine)
endforeach()
find_program(FM_PYTHON3 python3)
if(FM_PYTHON3 AND CMAKE_CROSSCOMPILING AND WIN32)
  # Under wine the suite cannot start the host's python3: the same check of
  # the trace it leaves runs here, after it.
  target_compile_definitions(test_eng_telemetry PRIVATE FM_JSON_CHECKED_ON_HOST)
  add_test(NAME engine_telemetry_json COMMAND ${FM_PYTHON3} -c
    "import json; d = json.load(open('tel_trace.json')); e = d['traceEvents']; assert any(x['ph'] == 'X' for x in e); assert all('ph' in x and 'name' in x for x in e)
try:
    json.load(open('tel_broken.json'))
except ValueError:
    pass
else:
    raise SystemExit('tel_broken.json parsed')")
  set_tests_properties(engine_telemetry PROPERTIES FIXTURES_SETUP telemetry_json)
  set_tests_properties(engine_telemetry_json PROPERTIES
    FIXTURES_REQUIRED telemetry_json WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
elseif(FM_PYTHON3)
  target_compile_definitions(test_eng_telemetry PRIVATE FM_PYTHON3="${FM_PYTHON3}")
endif()

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
