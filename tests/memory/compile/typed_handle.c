/* tests/memory/compile/typed_handle.c: compiled by CTest (never linked) to
 * prove that typed handles protect (compile_check.cmake). Without FAIL_CASE
 * it must compile cleanly (-Wall -Wextra -Werror); each FAIL_CASE adds one
 * mix-up that must not compile. */
#include "framemem/pool.h"

typedef struct particle {
    float x, y;
} particle;
typedef struct door {
    int open;
} door;

FM_HANDLE_TYPE(particle_ref);
FM_HANDLE_TYPE(door_ref);
FM_POOL_DECLARE_TYPED(particle, particle_pool)
FM_POOL_DECLARE_HANDLE(particle, particle_pool, particle_ref)
FM_POOL_DECLARE_HANDLE(door, door_pool, door_ref)

particle *follow(fm_pool *particles, fm_pool *doors, particle *p, door *d);
particle *follow(fm_pool *particles, fm_pool *doors, particle *p, door *d) {
    particle_ref pr = particle_pool_handle(particles, p);
    door_ref dr = door_pool_handle(doors, d);
    if (!door_pool_resolve(doors, dr)) return NULL;
#if FAIL_CASE == 1 /* a door's handle resolved in the particles */
    return particle_pool_resolve(particles, dr);
#elif FAIL_CASE == 2 /* a bare fm_handle where a particle_ref is wanted */
    return particle_pool_resolve(particles, pr.h);
#elif FAIL_CASE == 3 /* a particle's handle kept as a door's */
    dr = particle_pool_handle(particles, p);
#elif FAIL_CASE == 4 /* the handle of a door asked of the particle wrapper */
    pr = particle_pool_handle(particles, d);
#endif
    return particle_pool_resolve(particles, pr);
}
