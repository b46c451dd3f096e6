# arm64 Linux with Debian's cross compiler (gcc-aarch64-linux-gnu) and the
# arm64 libraries of dpkg's multiarch (libcmocka-dev:arm64); ctest runs each
# test under qemu-user. The loader and libc at run time are multiarch's
# (libc6:arm64, which libcmocka0:arm64 brings): with -L /usr/aarch64-linux-gnu
# qemu would take the cross sysroot's ld.so but find libcmocka's libc.so.6 in
# /lib/aarch64-linux-gnu, and that mix of two glibc builds hangs in
# pthread_create.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config reads the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
