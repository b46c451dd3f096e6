# 32-bit x86 Linux with Debian's cross compiler (gcc-i686-linux-gnu; gcc-multilib
# conflicts with the arm64 cross compiler). Static executables, which an
# x86-64 kernel with IA-32 emulation runs as they are; a kernel built without
# it (CONFIG_IA32_EMULATION off, or ia32_emulation=0: some VM and container
# kernels) refuses them ("Exec format error"), and ctest then runs each test
# under qemu-user's qemu-i386. A probe decides: a static 32-bit program,
# built and started once per build tree. FM_CROSS_PREFIX: where tools/dev
# installed the cmocka built for this target.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_COMPILER i686-linux-gnu-gcc)
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
set(FM_CROSS_SYSROOT /usr/i686-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/cross-prefix.cmake)

# FM_I686_NATIVE: whether this host runs the target's executables (cached;
# try_compile's own projects read the toolchain again and need no emulator).
get_property(fm_in_try_compile GLOBAL PROPERTY IN_TRY_COMPILE)
if(NOT DEFINED FM_I686_NATIVE AND NOT fm_in_try_compile)
  set(fm_probe_dir ${CMAKE_BINARY_DIR}/CMakeFiles/fm_i686_probe)
  file(MAKE_DIRECTORY ${fm_probe_dir})
  file(WRITE ${fm_probe_dir}/probe.c "int main(void) { return 0; }\n")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -static -o ${fm_probe_dir}/probe ${fm_probe_dir}/probe.c
                  RESULT_VARIABLE fm_probe_built OUTPUT_QUIET ERROR_QUIET)
  if(NOT fm_probe_built EQUAL 0)
    message(FATAL_ERROR "i686 toolchain: ${CMAKE_C_COMPILER} cannot build a static program (is gcc-i686-linux-gnu installed?)")
  endif()
  execute_process(COMMAND ${fm_probe_dir}/probe RESULT_VARIABLE fm_probe_ran OUTPUT_QUIET ERROR_QUIET)
  if(fm_probe_ran EQUAL 0)
    set(FM_I686_NATIVE ON CACHE BOOL "this host runs 32-bit x86 executables (probed)")
  else()
    set(FM_I686_NATIVE OFF CACHE BOOL "this host runs 32-bit x86 executables (probed)")
    message(STATUS "i686: this kernel does not run 32-bit x86 executables (${fm_probe_ran}): tests run under qemu-i386")
  endif()
endif()
if(DEFINED FM_I686_NATIVE AND NOT FM_I686_NATIVE)
  find_program(FM_QEMU_I386 qemu-i386)
  if(NOT FM_QEMU_I386)
    message(FATAL_ERROR "i686: this kernel does not run 32-bit x86 executables and qemu-i386 is missing (Debian package qemu-user)")
  endif()
  set(CMAKE_CROSSCOMPILING_EMULATOR ${FM_QEMU_I386})
endif()
