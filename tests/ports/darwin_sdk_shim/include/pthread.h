/* pthread.h (darwin_sdk_shim, not the SDK; see ../README.md): Darwin's LP64
 * pthread types (a signature word and opaque bytes: 56 for a mutex, 8 for
 * its attributes and for a once flag; pthread_key_t an unsigned long),
 * their static initialisers' signatures, and the functions framemem uses.
 * PTHREAD_MUTEX_RECURSIVE is 2 on Darwin. */
#ifndef FM_DARWIN_SHIM_PTHREAD_H
#define FM_DARWIN_SHIM_PTHREAD_H
#include <sys/_types.h>
typedef struct _opaque_pthread_mutex_t {
    long __sig;
    char __opaque[56];
} pthread_mutex_t;
typedef struct _opaque_pthread_mutexattr_t {
    long __sig;
    char __opaque[8];
} pthread_mutexattr_t;
typedef struct _opaque_pthread_once_t {
    long __sig;
    char __opaque[8];
} pthread_once_t;
typedef unsigned long pthread_key_t;

#define PTHREAD_MUTEX_INITIALIZER {0x32AAABA7, {0}}
#define PTHREAD_ONCE_INIT {0x30B1BCBA, {0}}
#define PTHREAD_MUTEX_RECURSIVE 2

int pthread_mutex_init(pthread_mutex_t *mutex, const pthread_mutexattr_t *attr);
int pthread_mutex_destroy(pthread_mutex_t *mutex);
int pthread_mutex_lock(pthread_mutex_t *mutex);
int pthread_mutex_unlock(pthread_mutex_t *mutex);
int pthread_mutexattr_init(pthread_mutexattr_t *attr);
int pthread_mutexattr_destroy(pthread_mutexattr_t *attr);
int pthread_mutexattr_settype(pthread_mutexattr_t *attr, int type);
int pthread_once(pthread_once_t *once, void (*init)(void));
int pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
int pthread_setspecific(pthread_key_t key, const void *value);
#endif
