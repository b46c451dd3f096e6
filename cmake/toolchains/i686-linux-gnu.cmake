# 32-bit x86 Linux with Debian's cross compiler (gcc-i686-linux-gnu; gcc-multilib
# conflicts with the arm64 cross compiler). Static executables that run on the
# x86-64 host as they are. FM_CROSS_PREFIX: where tools/dev installed the
# cmocka built for this target.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_COMPILER i686-linux-gnu-gcc)
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
set(FM_CROSS_SYSROOT /usr/i686-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/cross-prefix.cmake)
