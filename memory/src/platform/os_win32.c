/* platform/os_win32.c: os.h on Windows (and the thread-exit hook of
 * thread_win32.h): VirtualAlloc reservations, aligned by VirtualAlloc2's
 * address requirement where the system has it (Windows 10 1803 and later,
 * Wine) or else by reserving more, releasing and reserving again at the
 * aligned address; MEM_COMMIT / MEM_DECOMMIT; _aligned_malloc for the C heap;
 * QueryPerformanceCounter for the clock; FlsAlloc callbacks at thread exit.
 *
 * VirtualFree releases a reservation only whole (placeholders could split
 * one, but Wine refuses them), so has_partial_release is false: a pool
 * decommits a trimmed chunk and releases a growth's reservation with its
 * last chunk. Large pages need the SeLockMemoryPrivilege,
 * which a game does not hold: no huge pages here. */
#include "platform/os.h"

#include "platform/thread.h"

#include "framemem/base.h"

#include <malloc.h>
#include <string.h>

/* ------------------------------------------------------------ capabilities */

/* VirtualAlloc2 lives in kernelbase.dll from Windows 10 1803 on; older
 * systems do not export it, so it is looked up, not linked. */
typedef PVOID(WINAPI *fm__virtual_alloc2_fn)(HANDLE process, PVOID base, SIZE_T size, ULONG type,
                                             ULONG protect, MEM_EXTENDED_PARAMETER *params,
                                             ULONG count);

static fm__os_caps fm__os_caps_value;
static size_t fm__os_granularity; /* where VirtualAlloc places reservations */
static fm__virtual_alloc2_fn fm__virtual_alloc2;
static LARGE_INTEGER fm__qpc_freq;
static fm__once fm__os_caps_once = FM__ONCE_INIT;

static void fm__os_caps_fill(void) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    fm__os_granularity = si.dwAllocationGranularity ? si.dwAllocationGranularity : 65536;
    fm__os_caps_value = (fm__os_caps){
        .page_size = si.dwPageSize ? si.dwPageSize : 4096,
        .has_virtual_reserve = true,
        .has_partial_release = false,
    };
    HMODULE kernelbase = GetModuleHandleW(L"kernelbase.dll");
    if (kernelbase) {
        /* Through a generic function pointer: FARPROC to a typed one. */
        void (*proc)(void) = (void (*)(void))GetProcAddress(kernelbase, "VirtualAlloc2");
        fm__virtual_alloc2 = (fm__virtual_alloc2_fn)proc;
    }
    QueryPerformanceFrequency(&fm__qpc_freq);
}

const fm__os_caps *fm__os_get_caps(void) {
    fm__call_once(&fm__os_caps_once, fm__os_caps_fill);
    return &fm__os_caps_value;
}

/* ----------------------------------------------------------- virtual memory */

static DWORD fm__os_type(bool commit) { return MEM_RESERVE | (commit ? MEM_COMMIT : 0); }
static DWORD fm__os_protect(bool commit) { return commit ? PAGE_READWRITE : PAGE_NOACCESS; }

/* VirtualAlloc2 with an alignment requirement; NULL when the system has no
 * VirtualAlloc2 or refused. */
static void *fm__os_reserve_aligned2(size_t bytes, size_t align, bool commit) {
    if (!fm__virtual_alloc2) return NULL;
    MEM_ADDRESS_REQUIREMENTS req;
    memset(&req, 0, sizeof req);
    req.Alignment = align;
    MEM_EXTENDED_PARAMETER param;
    memset(&param, 0, sizeof param);
    param.Type = MemExtendedParameterAddressRequirements;
    param.Pointer = &req;
    return fm__virtual_alloc2(GetCurrentProcess(), NULL, bytes, fm__os_type(commit),
                              fm__os_protect(commit), &param, 1);
}

void *fm__os_reserve(size_t bytes, size_t align, bool commit) {
    const fm__os_caps *caps = fm__os_get_caps();
    if (bytes == 0) return NULL;
    bytes = fm_align_up(bytes, caps->page_size);
    if (align <= fm__os_granularity)
        return VirtualAlloc(NULL, bytes, fm__os_type(commit), fm__os_protect(commit));
    void *p = fm__os_reserve_aligned2(bytes, align, commit);
    if (p) return p;
    /* Reserve enough to contain an aligned start, give it back and reserve
     * exactly there. Another thread may take the range in between: try
     * again, a few times. */
    if (bytes > SIZE_MAX - align) return NULL;
    for (int attempt = 0; attempt < 16; attempt++) {
        void *raw = VirtualAlloc(NULL, bytes + align, MEM_RESERVE, PAGE_NOACCESS);
        if (!raw) return NULL;
        void *start = (void *)fm_align_up((uintptr_t)raw, align);
        VirtualFree(raw, 0, MEM_RELEASE);
        p = VirtualAlloc(start, bytes, fm__os_type(commit), fm__os_protect(commit));
        if (p) return p;
    }
    return NULL;
}

void *fm__os_reserve_below(void *end, size_t bytes, size_t align, bool commit) {
    (void)end; /* one call aligns already (see fm__os_reserve) */
    return fm__os_reserve(bytes, align, commit);
}

bool fm__os_commit(void *ptr, size_t bytes) {
    return VirtualAlloc(ptr, bytes, MEM_COMMIT, PAGE_READWRITE) != NULL;
}

void fm__os_decommit(void *ptr, size_t bytes) {
    /* Decommitted pages are inaccessible and come back zero-filled. */
    VirtualFree(ptr, bytes, MEM_DECOMMIT);
}

void fm__os_release(void *ptr, size_t bytes) {
    (void)bytes; /* a whole reservation, by its start (has_partial_release) */
    if (ptr) VirtualFree(ptr, 0, MEM_RELEASE);
}

void fm__os_prefault(void *ptr, size_t bytes) {
    size_t page = fm__os_get_caps()->page_size;
    volatile uint8_t *p = ptr;
    for (size_t off = 0; off < bytes; off += page) p[off] = p[off];
}

/* ------------------------------------------------------------- huge pages */

bool fm__os_huge_pages_usable(void) { return false; }

bool fm__os_advise_huge_pages(void *ptr, size_t bytes) {
    (void)ptr, (void)bytes;
    return false;
}

/* ----------------------------------------------------------------- C heap */

void *fm__os_heap_alloc(size_t bytes, size_t align) {
    return _aligned_malloc(bytes ? bytes : 1, align);
}

void fm__os_heap_free(void *ptr) { _aligned_free(ptr); }

/* ------------------------------------------------------------------ clock */

uint64_t fm__os_now_ns(void) {
    fm__os_get_caps();
    LARGE_INTEGER now;
    QueryPerformanceCounter(&now);
    uint64_t ticks = (uint64_t)now.QuadPart, freq = (uint64_t)fm__qpc_freq.QuadPart;
    if (freq == 0) return ticks;
    /* Split so ticks * 1e9 cannot overflow. */
    return ticks / freq * 1000000000u + ticks % freq * 1000000000u / freq;
}

/* --------------------------------------------------------- thread-exit hook */

/* Each hook's FLS callback: a WINAPI trampoline per hook that clears the
 * slot (as pthreads clears a key's value before its destructor) and calls
 * the hook's function. */
typedef struct fm__win_hook {
    DWORD index;
    void (*on_exit)(void *value);
} fm__win_hook;

static fm__win_hook fm__win_hooks[FM__EXIT_HOOKS];
static fm__mutex fm__win_hooks_lock = FM__MUTEX_INIT;
static unsigned fm__win_hooks_used;

static void fm__win_hook_run(unsigned k, void *value) {
    if (!value) return;
    FlsSetValue(fm__win_hooks[k].index, NULL);
    fm__win_hooks[k].on_exit(value);
}

#define FM__WIN_TRAMPOLINE(k)                                                                   \
    static void WINAPI fm__win_trampoline##k(void *value) { fm__win_hook_run(k, value); }
FM__WIN_TRAMPOLINE(0)
FM__WIN_TRAMPOLINE(1)
FM__WIN_TRAMPOLINE(2)
FM__WIN_TRAMPOLINE(3)

static PFLS_CALLBACK_FUNCTION const fm__win_trampolines[FM__EXIT_HOOKS] = {
    fm__win_trampoline0, fm__win_trampoline1, fm__win_trampoline2, fm__win_trampoline3};

bool fm__exit_hook_create(fm__exit_hook *hook, void (*on_exit)(void *value)) {
    fm__mutex_lock(&fm__win_hooks_lock);
    bool ok = false;
    unsigned k = fm__win_hooks_used;
    if (k < FM__EXIT_HOOKS) {
        fm__win_hooks[k].on_exit = on_exit;
        DWORD index = FlsAlloc(fm__win_trampolines[k]);
        if (index != FLS_OUT_OF_INDEXES) {
            fm__win_hooks[k].index = index;
            fm__win_hooks_used = k + 1;
            hook->index = index;
            ok = true;
        }
    }
    fm__mutex_unlock(&fm__win_hooks_lock);
    return ok;
}

bool fm__exit_hook_arm(fm__exit_hook *hook, void *value) {
    return FlsSetValue(hook->index, value) != 0;
}
