/* file.c: framemem_file, writing through a temporary file and rename, reading
 * without blocking (see framemem/file.h). */

/* 32-bit Linux: stat's 64-bit form, whatever the build passes. Without it
 * stat fails with EOVERFLOW on a file past 2 GiB or an inode number past
 * 2^32 (XFS, btrfs, network file systems). */
#ifndef _FILE_OFFSET_BITS
#define _FILE_OFFSET_BITS 64
#endif
#include "framemem/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_internal.h"
#include "platform/thread.h"

/* ------------------------------------------------------------- the OS's part */

#ifdef _WIN32
/* Windows: the C runtime's open/read/stat, plus what it lacks: _commit for
 * fsync, MoveFileEx for a rename that replaces (the CRT's refuses an
 * existing destination), the final path of a symbolic link, and file
 * identity by volume serial and file index (stat's st_ino is always 0). */
#include <io.h>
#include <process.h>

#define FM__O_EXTRA (O_BINARY | O_NOINHERIT)
#define FM__O_NONBLOCK 0 /* a pipe is refused by its type before it is read */
#define fm__fsync(fd) _commit(fd)

/* A Windows error as the errno the messages print. */
static int fm__file_errno_from_win(DWORD e) {
    switch (e) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND: return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION: return EACCES;
    case ERROR_ALREADY_EXISTS:
    case ERROR_FILE_EXISTS: return EEXIST;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL: return ENOSPC;
    case ERROR_FILENAME_EXCED_RANGE: return ENAMETOOLONG;
    default: return EIO;
    }
}

static int fm__rename_replacing(const char *from, const char *to) {
    if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) return 0;
    errno = fm__file_errno_from_win(GetLastError());
    return -1;
}

/* A handle for metadata only (folders too), or INVALID_HANDLE_VALUE. */
static HANDLE fm__file_handle(const char *path) {
    return CreateFileA(path, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                       OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
}

/* path is a symbolic link (or another reparse point) whose target exists:
 * that target's path in out. */
static bool fm__file_link_target(const char *path, char *out, size_t out_len, bool *is_link) {
    *is_link = false;
    DWORD attrs = GetFileAttributesA(path);
    if (attrs == INVALID_FILE_ATTRIBUTES || !(attrs & FILE_ATTRIBUTE_REPARSE_POINT)) return true;
    *is_link = true;
    HANDLE h = fm__file_handle(path);
    if (h == INVALID_HANDLE_VALUE) {
        errno = fm__file_errno_from_win(GetLastError());
        return false;
    }
    DWORD n = GetFinalPathNameByHandleA(h, out, (DWORD)out_len, FILE_NAME_NORMALIZED);
    DWORD e = GetLastError();
    CloseHandle(h);
    if (n == 0 || n >= out_len) {
        errno = n ? ENAMETOOLONG : fm__file_errno_from_win(e);
        return false;
    }
    return true;
}

/* Identity of an existing file or folder: volume serial and file index. */
static bool fm__file_os_id(const char *path, uint64_t *dev, uint64_t *ino) {
    HANDLE h = fm__file_handle(path);
    if (h == INVALID_HANDLE_VALUE) {
        errno = fm__file_errno_from_win(GetLastError());
        return false;
    }
    BY_HANDLE_FILE_INFORMATION info;
    BOOL ok = GetFileInformationByHandle(h, &info);
    CloseHandle(h);
    if (!ok) {
        errno = EIO;
        return false;
    }
    *dev = info.dwVolumeSerialNumber;
    *ino = (uint64_t)info.nFileIndexHigh << 32 | info.nFileIndexLow;
    return true;
}

/* A device (NUL, CON, COM1: no file of a folder, stat fails on them) or a
 * pipe at path. */
static bool fm__file_is_device(const char *path) {
    HANDLE h = fm__file_handle(path);
    if (h == INVALID_HANDLE_VALUE) return false;
    DWORD type = GetFileType(h);
    CloseHandle(h);
    return type == FILE_TYPE_CHAR || type == FILE_TYPE_PIPE;
}

/* Windows takes both separators. */
static const char *fm__file_last_sep(const char *path) {
    const char *a = strrchr(path, '/'), *b = strrchr(path, '\\');
    if (!a || !b) return a ? a : b;
    return a > b ? a : b;
}
#else
#define FM__O_EXTRA (O_CLOEXEC | O_NOCTTY)
#define FM__O_NONBLOCK O_NONBLOCK
#if defined(__APPLE__)
/* Darwin's fsync leaves the data in the drive's cache: F_FULLFSYNC flushes
 * it (where the file system refuses, fsync is the best there is). */
static int fm__fsync(int fd) { return fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd); }
#else
#define fm__fsync(fd) fsync(fd)
#endif
#define fm__rename_replacing(from, to) rename((from), (to))

static bool fm__file_link_target(const char *path, char *out, size_t out_len, bool *is_link) {
    struct stat lst;
    *is_link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    if (!*is_link) return true;
    char resolved[PATH_MAX];
    if (!realpath(path, resolved)) return false;
    if (strlen(resolved) >= out_len) {
        errno = ENAMETOOLONG;
        return false;
    }
    strcpy(out, resolved);
    return true;
}

static bool fm__file_os_id(const char *path, uint64_t *dev, uint64_t *ino) {
    struct stat st;
    if (stat(path, &st) != 0) return false;
    *dev = (uint64_t)st.st_dev;
    *ino = (uint64_t)st.st_ino;
    return true;
}

static const char *fm__file_last_sep(const char *path) { return strrchr(path, '/'); }
static bool fm__file_is_device(const char *path) {
    (void)path; /* stat says S_IFCHR */
    return false;
}
#endif

struct fm_file_writer {
    FILE *f;            /* the temporary file */
    int error;          /* errno of the first failure; 0: none */
    const char *failed; /* the step that failed */
    char name[FM_FILE_PATH_MAX]; /* the destination as given (messages) */
    char dest[FM_FILE_PATH_MAX]; /* what is replaced: name, or its link's target */
    char tmp[FM_FILE_PATH_MAX];
};

/* ------------------------------------------------------------- test hooks */

typedef struct fm__file_fault_t {
    fm__file_step step;
    int err;
} fm__file_fault_t;
static FM__THREAD_LOCAL fm__file_fault_t fm__file_fault_tls;
#define fm__file_fault FM__TLS(fm__file_fault_tls)

void fm__file_fail_next(fm__file_step step, int err) {
    fm__file_fault.step = step;
    fm__file_fault.err = err;
}

/* true (errno set) when a test asked this step to fail. */
static bool fm__file_injected(fm__file_step step) {
    if (fm__file_fault.step != step) return false;
    fm__file_fault.step = FM__FILE_STEP_NONE;
    errno = fm__file_fault.err;
    return true;
}

/* --------------------------------------------------------------- messages */

FM_FILE_PRINTF(3, 4)
static bool fm__file_fail(char *err, size_t err_len, const char *fmt, ...) {
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* An errno worth printing: a failed call that left errno 0 is still a failure. */
static int fm__file_errno(void) { return errno ? errno : EIO; }

/* ---------------------------------------------------------------- writing */

/* Where path's bytes go: path itself, or the file a symbolic link to a
 * regular file names (so the link stays a link). *mode: the permission bits
 * to give the new file, -1 for a new file (0644 less the umask at open). */
static bool fm__file_dest(const char *path, char *dest, int *mode, char *err, size_t err_len) {
    struct stat st;
    *mode = -1;
    if (fm__file_is_device(path))
        return fm__file_fail(err, err_len, "%s: not a regular file (refusing to replace it)",
                             path);
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return fm__file_fail(err, err_len, "%s: not a regular file (refusing to replace it)",
                                 path);
        *mode = (int)(st.st_mode & 0777);
        bool is_link;
        errno = 0;
        if (!fm__file_link_target(path, dest, FM_FILE_PATH_MAX, &is_link)) {
            if (errno == ENAMETOOLONG)
                return fm__file_fail(err, err_len, "%s: cannot write: path too long", path);
            return fm__file_fail(err, err_len, "%s: cannot write: %s", path,
                                 strerror(fm__file_errno()));
        }
        if (is_link) return true;
    } else if (errno != ENOENT) {
        /* ENOTDIR, EACCES, ELOOP...: creating it would fail the same way. */
        return fm__file_fail(err, err_len, "%s: cannot write: %s", path,
                             strerror(fm__file_errno()));
    }
    strcpy(dest, path);
    return true;
}

/* Creates "DEST.tmpPID-N" beside dest, exclusively (O_EXCL), so two writers
 * of one destination never share a temporary file. */
static int fm__file_create_temp(fm_file_writer *w, int mode) {
    static atomic_uint seq;
    const char *slash = fm__file_last_sep(w->dest);
    size_t dir_len = slash ? (size_t)(slash + 1 - w->dest) : 0;
    const char *base = w->dest + dir_len;
    /* Room for the suffix within a 255-byte file name. */
    int base_len = (int)(strlen(base) > 200 ? 200 : strlen(base));
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned n = atomic_fetch_add(&seq, 1u);
        int k = snprintf(w->tmp, sizeof w->tmp, "%.*s%.*s.tmp%ld-%u", (int)dir_len, w->dest,
                         base_len, base, (long)getpid(), n);
        if (k < 0 || (size_t)k >= sizeof w->tmp) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (fm__file_injected(FM__FILE_STEP_CREATE)) return -1;
        int fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | FM__O_EXTRA, 0644);
        if (fd >= 0) {
            /* A replaced file keeps its bits; a failure here leaves 0644 less
             * the umask, which is not worth failing the write for. Windows
             * keeps no such bits. */
#ifndef _WIN32
            if (mode >= 0) (void)fchmod(fd, (mode_t)mode);
#else
            (void)mode;
#endif
            return fd;
        }
        if (errno != EEXIST) return -1;
    }
    errno = EEXIST;
    return -1;
}

fm_file_writer *fm_file_begin(const char *path, char *err, size_t err_len) {
    if (!path || !path[0]) {
        fm__file_fail(err, err_len, "no output path given");
        return NULL;
    }
    if (strlen(path) >= FM_FILE_PATH_MAX) {
        fm__file_fail(err, err_len, "%.64s...: cannot write: path too long", path);
        return NULL;
    }
    fm_file_writer *w = calloc(1, sizeof *w);
    if (!w) {
        fm__file_fail(err, err_len, "%s: cannot write: out of memory", path);
        return NULL;
    }
    strcpy(w->name, path);
    int mode;
    if (!fm__file_dest(path, w->dest, &mode, err, err_len)) {
        free(w);
        return NULL;
    }
    int fd = fm__file_create_temp(w, mode);
    if (fd < 0) {
        fm__file_fail(err, err_len, "%s: cannot write: %s", path, strerror(fm__file_errno()));
        free(w);
        return NULL;
    }
    w->f = fdopen(fd, "wb");
    if (!w->f) {
        fm__file_fail(err, err_len, "%s: cannot write: %s", path, strerror(fm__file_errno()));
        close(fd);
        unlink(w->tmp);
        free(w);
        return NULL;
    }
    return w;
}

/* A NULL writer is a caller's bug, not a file problem: reported as every
 * framemem object's NULL is (base.h), and the call fails. */
static bool fm__file_null_writer(const char *fn) {
    fm_report_error(FM_ERR_INVALID_ARG, "%s: the writer is NULL", fn);
    return false;
}

static bool fm__file_failed(fm_file_writer *w, const char *step) {
    if (!w->error) {
        w->error = fm__file_errno();
        w->failed = step;
    }
    return false;
}

bool fm_file_write(fm_file_writer *w, const void *data, size_t size) {
    if (!w) return fm__file_null_writer(__func__);
    if (w->error) return false;
    if (size == 0) return true;
    errno = 0;
    if (fm__file_injected(FM__FILE_STEP_WRITE) || fwrite(data, 1, size, w->f) != size)
        return fm__file_failed(w, "write");
    return true;
}

bool fm_file_printf(fm_file_writer *w, const char *fmt, ...) {
    if (!w) return fm__file_null_writer(__func__);
    if (w->error) return false;
    errno = 0;
    if (fm__file_injected(FM__FILE_STEP_WRITE)) return fm__file_failed(w, "write");
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(w->f, fmt, ap);
    va_end(ap);
    return n < 0 ? fm__file_failed(w, "write") : true;
}

bool fm_file_ok(const fm_file_writer *w) {
    if (!w) return fm__file_null_writer(__func__);
    return !w->error;
}

void fm_file_abort(fm_file_writer *w) {
    if (!w) return;
    fclose(w->f);
    unlink(w->tmp);
    free(w);
}

/* Makes the rename itself durable. A folder that cannot be opened or synced
 * (some file systems refuse fsync on directories) does not undo a rename
 * that has happened: the new file is in place either way. */
static void fm__file_sync_dir(const char *dest) {
#ifdef _WIN32
    (void)dest; /* MOVEFILE_WRITE_THROUGH returned once the rename was on disk */
#else
    char dir[FM_FILE_PATH_MAX];
    const char *slash = strrchr(dest, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dest) strcpy(dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - dest), dest);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
#endif
}

bool fm_file_commit(fm_file_writer *w, char *err, size_t err_len) {
    if (!w) {
        fm__file_fail(err, err_len, "no file being written");
        return fm__file_null_writer(__func__);
    }
    errno = 0;
    /* fflush is where buffered writes meet the disk: a full disk shows here. */
    if (!w->error && (fm__file_injected(FM__FILE_STEP_FLUSH) || fflush(w->f) != 0))
        fm__file_failed(w, "write");
    if (!w->error && ferror(w->f)) {
        errno = EIO;
        fm__file_failed(w, "write");
    }
    errno = 0;
    if (!w->error && (fm__file_injected(FM__FILE_STEP_FSYNC) || fm__fsync(fileno(w->f)) != 0))
        fm__file_failed(w, "fsync");
    errno = 0;
    bool close_failed = fclose(w->f) != 0;
    if (fm__file_injected(FM__FILE_STEP_CLOSE)) close_failed = true;
    if (close_failed) fm__file_failed(w, "close");
    w->f = NULL;
    errno = 0;
    if (!w->error && (fm__file_injected(FM__FILE_STEP_RENAME) ||
                       fm__rename_replacing(w->tmp, w->dest) != 0))
        fm__file_failed(w, "rename");
    bool ok = !w->error;
    if (ok) {
        fm__file_sync_dir(w->dest);
    } else {
        unlink(w->tmp);
        fm__file_fail(err, err_len, "%s: %s failed: %s", w->name, w->failed, strerror(w->error));
    }
    free(w);
    return ok;
}

bool fm_file_write_whole(const char *path, const void *data, size_t size, char *err,
                         size_t err_len) {
    fm_file_writer *w = fm_file_begin(path, err, err_len);
    if (!w) return false;
    fm_file_write(w, data, size);
    return fm_file_commit(w, err, err_len);
}

/* ---------------------------------------------------------------- reading */

/* Opens path for reading without blocking and checks it is a regular file:
 * a FIFO opens at once (no writer needed with O_NONBLOCK) and is refused
 * here, before anything reads it. -1 with the message in err. */
static int fm__file_open_in(const char *path, struct stat *st, char *err, size_t err_len) {
    if (!path || !path[0]) return fm__file_fail(err, err_len, "no input file given"), -1;
#ifdef _WIN32
    /* The CRT's open refuses a folder (EACCES): its type says why first. */
    struct stat pre;
    if (stat(path, &pre) == 0 && S_ISDIR(pre.st_mode))
        return fm__file_fail(err, err_len, "%s: not a regular file", path), -1;
#endif
    int fd = open(path, O_RDONLY | FM__O_NONBLOCK | FM__O_EXTRA);
    if (fd < 0)
        return fm__file_fail(err, err_len, "%s: cannot open: %s", path,
                             strerror(fm__file_errno())),
               -1;
    if (fstat(fd, st) != 0) {
        int e = fm__file_errno();
        close(fd);
        return fm__file_fail(err, err_len, "%s: cannot open: %s", path, strerror(e)), -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return fm__file_fail(err, err_len, "%s: not a regular file", path), -1;
    }
    return fd;
}

bool fm_file_check_input(const char *path, size_t max_bytes, char *err, size_t err_len) {
    struct stat st;
    int fd = fm__file_open_in(path, &st, err, err_len);
    if (fd < 0) return false;
    close(fd);
    if (st.st_size < 0 || (uint64_t)st.st_size > (uint64_t)max_bytes)
        return fm__file_fail(err, err_len, "%s: too large (cap %zu bytes)", path, max_bytes);
    return true;
}

void fm_file_data_release(fm_file_data *d) {
    if (!d) return;
    if (d->data) fm_allocator_free(&d->allocator_, d->data, d->alloc_size_);
    memset(d, 0, sizeof *d);
}

bool fm_file_read(const char *path, size_t max_bytes, const fm_allocator *a, fm_file_data *out,
                  char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    if (a) out->allocator_ = *a;
    if (!fm_allocator_valid(&out->allocator_)) {
        memset(out, 0, sizeof *out);
        return fm__file_fail(err, err_len, "%s: invalid allocator", path ? path : "(null)");
    }
    if (max_bytes > SIZE_MAX / 2) max_bytes = SIZE_MAX / 2; /* room for +2 below */
    struct stat st;
    int fd = fm__file_open_in(path, &st, err, err_len);
    if (fd < 0) return false;
    if (st.st_size < 0 || (uint64_t)st.st_size > (uint64_t)max_bytes) {
        close(fd);
        return fm__file_fail(err, err_len, "%s: too large (cap %zu bytes)", path, max_bytes);
    }
    /* The size fstat gave plus one byte, to see the end (or a file growing
     * while it is read, which may go on up to the cap), plus the NUL. */
    size_t cap = (size_t)st.st_size + 2, len = 0;
    char *buf = fm_allocator_alloc(&out->allocator_, cap, 16);
    if (!buf) {
        close(fd);
        return fm__file_fail(err, err_len, "%s: out of memory (%zu bytes)", path, cap);
    }
    for (;;) {
        if (len + 1 == cap) {
            if (len > max_bytes) break;
            size_t want = (cap - 1) * 2; /* readable bytes; len <= max_bytes < want's cap */
            if (want < 4096) want = 4096;
            if (want > max_bytes + 1) want = max_bytes + 1;
            size_t ncap = want + 1;
            char *nb = fm_allocator_alloc(&out->allocator_, ncap, 16);
            if (!nb) {
                fm_allocator_free(&out->allocator_, buf, cap);
                close(fd);
                return fm__file_fail(err, err_len, "%s: out of memory (%zu bytes)", path, ncap);
            }
            memcpy(nb, buf, len);
            fm_allocator_free(&out->allocator_, buf, cap);
            buf = nb;
            cap = ncap;
        }
        errno = 0;
        size_t want = cap - 1 - len;
        if (want > INT_MAX) want = INT_MAX; /* Windows' read takes an unsigned int */
        ssize_t got = fm__file_injected(FM__FILE_STEP_READ) ? -1 : read(fd, buf + len, want);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = fm__file_errno();
            fm_allocator_free(&out->allocator_, buf, cap);
            close(fd);
            return fm__file_fail(err, err_len, "%s: read failed: %s", path, strerror(e));
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    close(fd);
    if (len > max_bytes) {
        fm_allocator_free(&out->allocator_, buf, cap);
        return fm__file_fail(err, err_len, "%s: too large (cap %zu bytes)", path, max_bytes);
    }
    buf[len] = 0;
    out->data = buf;
    out->size = len;
    out->alloc_size_ = cap;
    return true;
}

bool fm_file_skip_bom(const char **data, size_t *size) {
    if (!data || !*data || !size || *size < 3 || memcmp(*data, "\xEF\xBB\xBF", 3) != 0)
        return false;
    *data += 3;
    *size -= 3;
    return true;
}

bool fm_file_stdout_ok(char *err, size_t err_len) {
    errno = 0;
    int flushed = fflush(stdout);
    if (flushed == 0 && !ferror(stdout)) return true;
    if (flushed != 0)
        return fm__file_fail(err, err_len, "standard output: write failed: %s",
                             strerror(errno ? errno : EIO));
    /* An earlier flush failed and its reason is gone. */
    return fm__file_fail(err, err_len, "standard output: write failed (output was lost)");
}

/* --------------------------------------------------- checks before a run */

/* A file's identity: its device and inode, or for a path not created yet
 * its folder's plus its name (two such paths name the same future file). */
typedef struct fm__file_id {
    uint64_t dev;
    uint64_t ino;
    const char *name; /* NULL when the file exists */
    bool known;
} fm__file_id;

static fm__file_id fm__file_identify(const char *path) {
    fm__file_id id = {0};
    struct stat st;
    errno = 0;
    if (stat(path, &st) == 0) {
        id.known = fm__file_os_id(path, &id.dev, &id.ino);
        return id;
    }
    if (errno != ENOENT) return id;
    const char *slash = fm__file_last_sep(path);
    char dir[FM_FILE_PATH_MAX];
    if (!slash) strcpy(dir, ".");
    else if (slash == path) strcpy(dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (!fm__file_os_id(dir, &id.dev, &id.ino)) return id;
    id.name = slash ? slash + 1 : path;
    id.known = true;
    return id;
}

static bool fm__file_same(const fm__file_id *a, const fm__file_id *b) {
    if (!a->known || !b->known || a->dev != b->dev || a->ino != b->ino) return false;
    if (!a->name || !b->name) return !a->name && !b->name;
    return strcmp(a->name, b->name) == 0;
}

/* The first of paths[0, n) (NULLs skipped) naming the file id names; NULL if none. */
static const char *fm__file_same_as(const fm__file_id *id, const char *const *paths, size_t n) {
    for (size_t k = 0; k < n; k++) {
        if (!paths[k]) continue;
        fm__file_id other = fm__file_identify(paths[k]);
        if (fm__file_same(id, &other)) return paths[k];
    }
    return NULL;
}

bool fm_file_check_outputs(const char *const *outputs, size_t output_count,
                           const char *const *inputs, size_t input_count, char *err,
                           size_t err_len) {
    for (size_t i = 0; i < output_count; i++) {
        const char *out = outputs[i];
        if (!out) continue;
        struct stat st;
        if (fm__file_is_device(out) || (stat(out, &st) == 0 && !S_ISREG(st.st_mode)))
            return fm__file_fail(err, err_len, "%s: not a regular file (refusing to replace it)",
                                 out);
        fm__file_id id = fm__file_identify(out);
        const char *in = fm__file_same_as(&id, inputs, input_count);
        if (in) return fm__file_fail(err, err_len, "%s: the same file as the input %s", out, in);
        const char *twin = fm__file_same_as(&id, outputs, i);
        if (twin)
            return fm__file_fail(err, err_len, "%s: given for two outputs (also as %s)", out, twin);
    }
    return true;
}
