# 64-bit Windows with Debian's MinGW-w64 cross compiler, win32 thread model
# (x86_64-w64-mingw32-gcc-win32: libgcc without winpthreads). ctest runs each
# test under wine64. FM_CROSS_PREFIX: where tools/dev installed the cmocka
# built for this target.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-win32)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
# Under setarch -R (no address-space randomisation): Debian's wine64 has no
# preloader, so where randomisation places the process's own mappings
# decides whether Windows' shared user data (0x7ffe0000) can be mapped:
# 3 of about 15,500 starts exited 1 before the test's first line
# ("virtual_alloc_first_teb: failed to map the shared user data:
# c0000018"), none in 7000 under -R.
set(CMAKE_CROSSCOMPILING_EMULATOR setarch x86_64 -R /usr/lib/wine/wine64)
# Static libgcc: the executables need no DLL beside them under wine.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static -static-libgcc")
set(FM_CROSS_SYSROOT /usr/x86_64-w64-mingw32)
include(${CMAKE_CURRENT_LIST_DIR}/cross-prefix.cmake)
