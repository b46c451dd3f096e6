# Ports checked without their platform (tests/ports/): included from
# tests/CMakeLists.txt. ports_darwin_compile compiles every source of a macOS
# build for arm64 and x86_64 Apple targets with clang, against
# darwin_sdk_shim (Debian has no macOS SDK; nothing is linked or run), and
# checks that the macOS branches are the ones taken (check_darwin.sh). It
# uses the host's clang whatever the build's compiler: native builds without
# sanitizers only, as the other compilers' header checks.
if(NOT FM_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME ports_darwin_compile
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_darwin.sh ${PROJECT_SOURCE_DIR})
  set_tests_properties(ports_darwin_compile PROPERTIES TIMEOUT 300 LABELS "ports;once")
endif()
