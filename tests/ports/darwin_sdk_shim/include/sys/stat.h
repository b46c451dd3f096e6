/* sys/stat.h (darwin_sdk_shim, not the SDK; see ../../README.md): Darwin's
 * struct stat with 64-bit inodes (the default since macOS 10.6) and its
 * file-type bits. */
#ifndef FM_DARWIN_SHIM_SYS_STAT_H
#define FM_DARWIN_SHIM_SYS_STAT_H
#include <sys/_types.h>
struct stat {
    dev_t st_dev;
    mode_t st_mode;
    nlink_t st_nlink;
    ino_t st_ino;
    uid_t st_uid;
    gid_t st_gid;
    dev_t st_rdev;
    struct timespec st_atimespec;
    struct timespec st_mtimespec;
    struct timespec st_ctimespec;
    struct timespec st_birthtimespec;
    off_t st_size;
    blkcnt_t st_blocks;
    blksize_t st_blksize;
    uint32_t st_flags;
    uint32_t st_gen;
    int32_t st_lspare;
    int64_t st_qspare[2];
};
#define S_IFMT 0170000
#define S_IFREG 0100000
#define S_IFLNK 0120000
#define S_ISREG(m) (((m) & S_IFMT) == S_IFREG)
#define S_ISLNK(m) (((m) & S_IFMT) == S_IFLNK)
int stat(const char *restrict path, struct stat *restrict buf);
int lstat(const char *restrict path, struct stat *restrict buf);
int fstat(int fd, struct stat *buf);
int fchmod(int fd, mode_t mode);
#endif
