/* framemem/framemem.h: the whole library in one include. */
#ifndef FRAMEMEM_FRAMEMEM_H
#define FRAMEMEM_FRAMEMEM_H
#include "framemem/arena.h"
#include "framemem/base.h"
#include "framemem/clock.h"
#include "framemem/closure.h"
#include "framemem/hooks.h"
#include "framemem/pool.h"
#include "framemem/tag.h"
#endif
