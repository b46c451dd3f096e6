/* assert.h (darwin_sdk_shim, not the SDK; see ../README.md). Not guarded: each
 * include follows the NDEBUG of the moment, as C requires. */
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
void __assert_rtn(const char *func, const char *file, int line, const char *expr)
    __attribute__((noreturn));
#define assert(e) \
    (__builtin_expect(!(e), 0) ? __assert_rtn(__func__, __FILE__, __LINE__, #e) : (void)0)
#endif
