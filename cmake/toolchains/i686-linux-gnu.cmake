# 32-bit x86 Linux with Debian's cross compiler (gcc-i686-linux-gnu; gcc-multilib
# conflicts with the arm64 cross compiler). Static executables that run on the
# x86-64 host as they are. FM_CROSS_PREFIX: where tools/dev installed the
# cmocka built for this target.
# try_compile projects get the prefix too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FM_CROSS_PREFIX)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_COMPILER i686-linux-gnu-gcc)

set(CMAKE_FIND_ROOT_PATH /usr/i686-linux-gnu ${FM_CROSS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
# pkg-config reads the cross prefix's .pc files only (cmocka's).
set(ENV{PKG_CONFIG_LIBDIR} ${FM_CROSS_PREFIX}/lib/pkgconfig)
