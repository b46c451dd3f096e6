/* sched.h (darwin_sdk_shim, not the SDK; see ../README.md). */
#ifndef FM_DARWIN_SHIM_SCHED_H
#define FM_DARWIN_SHIM_SCHED_H
int sched_yield(void);
#endif
