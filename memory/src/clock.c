/* clock.c: calibration of the cycle clock against the OS's monotonic clock. */
#include "framemem/clock.h"

#include "platform/os.h"
#include "platform/thread.h"

/* For callers without the inline read (other compilers, or a pointer to
 * the function): the same counter. */
uint64_t(fm_clock_now)(void) {
#ifdef FM_CLOCK_IS_NS
    return fm__os_now_ns();
#else
    return fm__clock_now_inline();
#endif
}

static fm__once fm__clock_once = FM__ONCE_INIT;
static double fm__ticks_per_sec = 1e9;
/* ns = ticks * mul >> 32: a multiply and a shift instead of a float divide. */
static uint64_t fm__ns_mul = (uint64_t)1 << 32;

static void fm__clock_calibrate(void) {
#if defined(FM_CLOCK_IS_NS)
    fm__ticks_per_sec = 1e9;
#elif defined(__aarch64__)
    uint64_t freq;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(freq));
    fm__ticks_per_sec = (double)freq;
#else
    /* Two short windows; keep the one with the smaller bracketing error.
     * 2 ms each gives a rate within ~0.1 %, plenty for telemetry. */
    double best = 0.0;
    uint64_t best_err = UINT64_MAX;
    for (int i = 0; i < 2; i++) {
        uint64_t n0 = fm__os_now_ns(), t0 = fm_clock_now(), n0b = fm__os_now_ns();
        uint64_t target = n0 + 2000000u, n1, t1, n1b;
        do {
            n1 = fm__os_now_ns();
        } while (n1 < target);
        t1 = fm_clock_now();
        n1b = fm__os_now_ns();
        uint64_t err = (n0b - n0) + (n1b - n1);
        double ns = (double)((n1 + n1b) / 2 - (n0 + n0b) / 2);
        if (err < best_err && ns > 0) {
            best_err = err;
            best = (double)(t1 - t0) * 1e9 / ns;
        }
    }
    fm__ticks_per_sec = best > 0 ? best : 1e9;
#endif
    fm__ns_mul = (uint64_t)(1e9 / fm__ticks_per_sec * 4294967296.0);
}

void fm_clock_init(void) { fm__call_once(&fm__clock_once, fm__clock_calibrate); }

uint64_t fm_clock_to_ns(uint64_t ticks) {
    fm_clock_init();
    /* Split so ticks * mul cannot overflow for spans of hours. */
    uint64_t hi = ticks >> 32, lo = ticks & 0xffffffffu;
    return hi * fm__ns_mul + ((lo * fm__ns_mul) >> 32);
}

double fm_clock_ticks_per_sec(void) {
    fm_clock_init();
    return fm__ticks_per_sec;
}

const char *fm_clock_source(void) {
#if defined(FM_CLOCK_IS_NS)
    return "clock_gettime";
#elif defined(__aarch64__)
    return "cntvct";
#else
    return "rdtsc";
#endif
}
