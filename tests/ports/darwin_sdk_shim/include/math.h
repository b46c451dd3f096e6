/* math.h (darwin_sdk_shim, not the SDK; see ../README.md). isfinite is a
 * macro over a type-generic test, as C requires (Apple's calls inline
 * functions over the same builtin). */
#ifndef FM_DARWIN_SHIM_MATH_H
#define FM_DARWIN_SHIM_MATH_H
#define isfinite(x) __builtin_isfinite(x)
float fabsf(float x);
float sqrtf(float x);
float sinf(float x);
float cosf(float x);
double floor(double x);
long lround(double x);
#endif
