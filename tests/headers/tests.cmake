# Headers for every caller (tests/headers/): included from tests/CMakeLists.txt
# (paths relative to tests/). test_headers.c, one program using every public
# header and macro, built as C99 and (test_headers.cpp) as C++17 and C++20
# with the project's compilers, -pedantic on top of the project's warnings,
# and run, in every configuration (sanitizers included). check_headers.sh
# builds it with the other compilers and language modes, compiles the
# headers in MSVC mode and runs both atomics mappings (not under
# sanitizers: it links the library as a caller's build would).
function(fm_add_header_test target source ctest_name)
  add_executable(${target} ${source})
  target_link_libraries(${target} PRIVATE framemem_engine framemem_telemetry framemem_file framemem
    fm_warnings)
  target_compile_options(${target} PRIVATE -pedantic)
  if(TARGET framemem_overlay)
    target_link_libraries(${target} PRIVATE framemem_overlay)
    target_compile_definitions(${target} PRIVATE FM_TEST_OVERLAY)
  endif()
  add_test(NAME ${ctest_name} COMMAND ${target})
  # The file it writes and reads back lands beside the binary.
  set_tests_properties(${ctest_name} PROPERTIES TIMEOUT 120
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endfunction()

if(TARGET framemem_engine)
  fm_add_header_test(test_headers_c99 headers/test_headers.c headers_c99)
  set_target_properties(test_headers_c99 PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
  if(CMAKE_CXX_COMPILER)
    foreach(std 17 20)
      fm_add_header_test(test_headers_cxx${std} headers/test_headers.cpp headers_cxx${std})
      set_target_properties(test_headers_cxx${std} PROPERTIES
        CXX_STANDARD ${std} CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
    endforeach()
  elseif(NOT CMAKE_CROSSCOMPILING)
    message(WARNING "no C++ compiler: the C++ header tests (headers_cxx17, headers_cxx20) "
                    "are not built; tools/dev installs g++")
  endif()

  # The host's compilers against the library: native builds only.
  if(NOT FM_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
    set(fm_check ${CMAKE_CURRENT_SOURCE_DIR}/headers/check_headers.sh)
    set(fm_flags "-O0 -g")
    if(CMAKE_BUILD_TYPE STREQUAL "Release")
      set(fm_flags "-O2 -DNDEBUG")
    endif()
    # The library's public definitions (FM_TRACK_SITES in Debug builds).
    set(fm_defs $<TARGET_PROPERTY:framemem,INTERFACE_COMPILE_DEFINITIONS>)
    set(fm_flags "${fm_flags} $<$<BOOL:${fm_defs}>:-D$<JOIN:${fm_defs}, -D>>")
    set(fm_libs $<TARGET_FILE:framemem_engine> $<TARGET_FILE:framemem_telemetry>
                $<TARGET_FILE:framemem_file>
                $<TARGET_FILE:framemem>)
    set(fm_overlay 0)
    if(TARGET framemem_overlay)
      set(fm_libs $<TARGET_FILE:framemem_overlay> ${fm_libs})
      set(fm_overlay 1)
    endif()
    add_test(NAME headers_other_compilers
      COMMAND ${CMAKE_COMMAND} -E env FM_TEST_OVERLAY=${fm_overlay}
              bash ${fm_check} compilers ${PROJECT_SOURCE_DIR} "${fm_flags}" ${fm_libs})
    add_test(NAME headers_msvc_mode COMMAND bash ${fm_check} msvc ${PROJECT_SOURCE_DIR})
    add_test(NAME headers_atomic_mappings COMMAND bash ${fm_check} atomic ${PROJECT_SOURCE_DIR})
    add_test(NAME headers_pool_h_length
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_pool_h_length.sh ${PROJECT_SOURCE_DIR})
    set_tests_properties(headers_other_compilers headers_msvc_mode headers_atomic_mappings
      PROPERTIES TIMEOUT 300)
  endif()
endif()
