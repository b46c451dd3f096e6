# 64-bit Windows with Debian's MinGW-w64 cross compiler, win32 thread model
# (x86_64-w64-mingw32-gcc-win32: libgcc without winpthreads). ctest runs each
# test under wine64. FM_CROSS_PREFIX: where tools/dev installed the cmocka
# built for this target.
# try_compile projects get the prefix too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FM_CROSS_PREFIX)
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-win32)

set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32 ${FM_CROSS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR /usr/lib/wine/wine64)
# Static libgcc: the executables need no DLL beside them under wine.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static -static-libgcc")
# pkg-config reads the cross prefix's .pc files only (cmocka's).
set(ENV{PKG_CONFIG_LIBDIR} ${FM_CROSS_PREFIX}/lib/pkgconfig)
