# tests/memory/compile_check.cmake: compiles SOURCE (syntax only) with CC
# against framemem's headers (INCLUDE) and checks the outcome:
#   cmake -DCC=cc -DSOURCE=file.c -DINCLUDE=dir [-DFAIL_CASE=n] -DEXPECT=pass|fail -P compile_check.cmake
# EXPECT=pass: it must compile without a diagnostic. EXPECT=fail: it must be
# refused, and for a type mix-up (the diagnostic says "incompatible"), not
# for anything else.
set(defs "")
if(DEFINED FAIL_CASE)
  set(defs "-DFAIL_CASE=${FAIL_CASE}")
endif()
execute_process(
  COMMAND ${CC} -std=c11 -fsyntax-only -Wall -Wextra -Werror -I${INCLUDE} ${defs} ${SOURCE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0 OR NOT "${err}" STREQUAL "")
    message(FATAL_ERROR "expected ${SOURCE} to compile cleanly (exit ${rc}):\n${err}")
  endif()
elseif(EXPECT STREQUAL "fail")
  if(rc EQUAL 0)
    message(FATAL_ERROR "FAIL_CASE ${FAIL_CASE} of ${SOURCE} compiled; it must not")
  endif()
  if(NOT err MATCHES "incompatible")
    message(FATAL_ERROR "FAIL_CASE ${FAIL_CASE} of ${SOURCE} failed, but not as a type mix-up:\n${err}")
  endif()
  message(STATUS "refused as expected:\n${err}")
else()
  message(FATAL_ERROR "EXPECT must be pass or fail")
endif()
