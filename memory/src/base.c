/* base.c: errors, the error handler, names of policies, system allocator. */
#include "internal.h"
#include "platform/os.h"
#include "platform/thread.h"

#include <stdio.h>
#include <string.h>

/* base.h fixes FM_DEFAULT_ALIGN at 16 for every caller's compiler; no target
 * may need more for its fundamental types. */
_Static_assert(FM_DEFAULT_ALIGN % alignof(max_align_t) == 0,
               "FM_DEFAULT_ALIGN below this target's alignof(max_align_t)");

/* ---------------------------------------------------------------- errors */

static const char *const fm__error_names[] = {
#define FM__ERROR_NAME(name, msg) #name,
    FM_ERROR_LIST(FM__ERROR_NAME)
#undef FM__ERROR_NAME
};
static const char *const fm__error_msgs[] = {
#define FM__ERROR_MSG(name, msg) msg,
    FM_ERROR_LIST(FM__ERROR_MSG)
#undef FM__ERROR_MSG
};

const char *fm_error_name(fm_error err) {
    if ((unsigned)err >= FM_ERROR_COUNT) return "FM_ERR_?";
    return fm__error_names[err];
}

bool fm_error_is_warning(fm_error err) {
    return err == FM_WARN_BUDGET || err == FM_WARN_NO_SITES;
}

const char *fm_error_str(fm_error err) {
    if ((unsigned)err >= FM_ERROR_COUNT) return "unknown error";
    return fm__error_msgs[err];
}

static FM__THREAD_LOCAL fm_error fm__last_error_tls;
static FM__THREAD_LOCAL char fm__last_message_tls[512];
#define fm__last_error FM__TLS(fm__last_error_tls)
#define fm__last_message FM__TLS(fm__last_message_tls)

fm_error fm_last_error(void) { return fm__last_error; }
void fm_clear_error(void) {
    fm__last_error = FM_OK;
    fm__last_message[0] = '\0';
}
const char *fm_last_error_message(void) { return fm__last_message; }

/* The handler and its user pointer change together, so a lock (not two
 * atomics) guards them; it is taken only on error paths. */
static fm__mutex fm__handler_lock = FM__MUTEX_INIT;
static fm_error_fn fm__handler;
static void *fm__handler_user;

void fm_set_error_handler(fm_error_fn fn, void *user) {
    fm__mutex_lock(&fm__handler_lock);
    fm__handler = fn;
    fm__handler_user = fn ? user : NULL;
    fm__mutex_unlock(&fm__handler_lock);
}

/* The message goes to the handler; errors also become the thread's last
 * error (warnings leave it alone: their call succeeded). */
static void fm__vreport(fm_error err, const char *fmt, va_list ap) {
    char warning[sizeof fm__last_message];
    char *msg = fm__last_message;
    if (fm_error_is_warning(err)) msg = warning;
    vsnprintf(msg, sizeof fm__last_message, fmt, ap);
    if (msg == fm__last_message) fm__last_error = err;

    fm__mutex_lock(&fm__handler_lock);
    fm_error_fn fn = fm__handler;
    void *user = fm__handler_user;
    fm__mutex_unlock(&fm__handler_lock);
    /* Called outside the lock: a handler may install another handler. */
    if (fn) {
        fn(err, msg, user);
    } else {
        fprintf(stderr, "framemem: %s: %s\n", fm_error_name(err), msg);
    }
}

void fm__report(fm_error err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fm__vreport(err, fmt, ap);
    va_end(ap);
}

void fm_report_error(fm_error err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fm__vreport(err, fmt ? fmt : "", ap);
    va_end(ap);
}

void fm__report_null(const char *fn, const char *what) {
    fm__report(FM_ERR_INVALID_ARG, "%s: the %s is NULL", fn, what);
}

fm_error fm__desc_verdict(const char *null_call, const char *why, char *msg, size_t msg_len) {
    if (null_call) {
        fm__report_null(null_call, "desc");
        why = "no desc (NULL)";
    }
    if (msg && msg_len) snprintf(msg, msg_len, "%s", why ? why : "");
    return why ? FM_ERR_INVALID_ARG : FM_OK;
}

bool fm__desc_accepted(fm_error check, const char *kind, const char *name, const char *why) {
    if (check == FM_OK) return true;
    fm__report(FM_ERR_INVALID_ARG, "%s '%s': %s", kind, name, why);
    return false;
}

/* ------------------------------------------------------------ valgrind */

bool fm__calls_annotated(void) {
#ifdef FM_USE_VALGRIND
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
}

/* ----------------------------------------------------------------- names */

const char *fm_sync_name(fm_sync sync) {
    static const char *const names[] = {"none", "mutex", "thread_cache", "lockfree"};
    return (unsigned)sync < FM_SYNC_COUNT ? names[sync] : "?";
}

const char *fm_growth_name(fm_growth growth) {
    static const char *const names[] = {"geometric", "linear", "fixed"};
    return (unsigned)growth < FM_GROWTH_COUNT ? names[growth] : "?";
}

const char *fm__sync_problem(fm_sync sync, bool pool_policies, bool lockfree) {
    if ((unsigned)sync >= FM_SYNC_COUNT) return "unknown sync policy";
    if (pool_policies) return NULL;
    if (sync == FM_SYNC_THREAD_CACHE)
        return lockfree ? "FM_SYNC_THREAD_CACHE is a pool policy; take NONE, MUTEX or LOCKFREE"
                        : "FM_SYNC_THREAD_CACHE is a pool policy; take NONE or MUTEX";
    if (sync == FM_SYNC_LOCKFREE && !lockfree)
        return "FM_SYNC_LOCKFREE is not offered here; take NONE or MUTEX";
    return NULL;
}

/* ------------------------------------------------------ backing memory */

bool fm_allocator_valid(const fm_allocator *a) {
    FM__REFUSE_NULL(a, "allocator", false);
    return (a->alloc == NULL) == (a->free == NULL);
}

void *fm_allocator_alloc(const fm_allocator *a, size_t size, size_t align) {
    FM__REFUSE_NULL(a, "allocator", NULL);
    if (align < sizeof(void *)) align = sizeof(void *);
    if (!fm__allocator_is_system(a)) return a->alloc(size, align, a->user);
    return fm__os_heap_alloc(size, align);
}

void fm_allocator_free(const fm_allocator *a, void *ptr, size_t size) {
    if (!ptr) return;
    FM__REFUSE_NULL(a, "allocator", );
    if (!fm__allocator_is_system(a)) {
        a->free(ptr, size, a->user);
    } else {
        fm__os_heap_free(ptr);
    }
}

void *fm__object_new(const fm_allocator *a, size_t size, size_t align, size_t name_offset,
                     const char *kind, const char *name, size_t *self_bytes) {
    size_t name_len = strlen(name);
    size_t bytes = name_offset + name_len + 1;
    if (bytes < size) bytes = size;
    unsigned char *obj = fm_allocator_alloc(a, bytes, align);
    if (!obj) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "%s '%s': no memory for the object itself", kind, name);
        return NULL;
    }
    memset(obj, 0, size);
    memcpy(obj + name_offset, name, name_len + 1);
    *self_bytes = bytes;
    return obj;
}

bool fm__grow_array(const fm_allocator *a, void **arr, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint64_t n = *cap ? *cap : 8;
    while (n < need) n *= 2;
    if (n > UINT32_MAX) return false;
    void *mem = fm_allocator_alloc(a, (size_t)n * elem, alignof(max_align_t));
    if (!mem) return false;
    if (*arr) memcpy(mem, *arr, (size_t)*cap * elem);
    fm_allocator_free(a, *arr, (size_t)*cap * elem);
    *arr = mem;
    *cap = (uint32_t)n;
    return true;
}
