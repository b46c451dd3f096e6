# Shared by the toolchain files whose target libraries (cmocka) tools/dev
# builds into FM_CROSS_PREFIX: the target's sysroot (FM_CROSS_SYSROOT, set
# by the including file) and that prefix are the only places searched for
# libraries, headers and packages, and pkg-config reads the prefix's .pc
# files only.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FM_CROSS_PREFIX)
set(CMAKE_FIND_ROOT_PATH ${FM_CROSS_SYSROOT} ${FM_CROSS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} ${FM_CROSS_PREFIX}/lib/pkgconfig)
