#!/usr/bin/env python3
"""tests/fuzz/make_seeds.py: writes the hand-made seeds of corpus/<name>/.

Each seed is a short program in a harness's input encoding (see the comment
at the top of each fuzz_<name>.c and the op_* functions), written out with the
small helpers below so that it reads as what it does. The seeds only give the
fuzzer a start in every corner (each mode, growth policy, misuse and fault);
reproducers of crashes found later sit beside them as crash-<sha1> files.

    python3 tests/fuzz/make_seeds.py     # rewrites the seed-* files only
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def u16(v):
    return struct.pack("<H", v & 0xFFFF)


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def write(name, seeds):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith("seed-"):
            os.remove(os.path.join(d, f))
    for seed_name, data in seeds.items():
        with open(os.path.join(d, "seed-" + seed_name), "wb") as f:
            f.write(bytes(data))


# ------------------------------------------------------------------ pool

GEOMETRIC, LINEAR, FIXED, GEOMETRIC_FACTOR = 0, 1, 2, 3


def pool_header(growth=GEOMETRIC, align_shift=13, hooks=False, system=False,
                item_size=24, initial=0, max_cap=0x80, grow=0, silent=False,
                prefault=False, other=False, create_fail=0, mutex=False, chunk=0):
    """align_shift 0..12: 1 << shift; 13: default; 15: invalid.
    item_size 1..1024 (0 and FM_POOL_MAX_ITEM_SIZE + 1 via 0xFFFF / 0xFFFE).
    initial: 0 default, 1..127, or 0x80 | k for k * 64. max_cap: 0x80 unbounded.
    chunk: 0 default, k 1..7 for 4096 << (k - 1) bytes, 8 a refused size."""
    b0 = growth | (align_shift << 2) | (0x40 if hooks else 0) | (0x80 if system else 0)
    size_sel = {0: 0xFFFF, -1: 0xFFFE}.get(item_size, item_size - 1)
    flags = (1 if silent else 0) | (6 if prefault else 0) | (8 if other else 0) | (create_fail << 4)
    flags |= 0x80 if mutex else 0
    return [b0] + list(u16(size_sel)) + [initial, max_cap, grow, flags, chunk]


class Pool:
    def __init__(self, **hdr):
        self.b = pool_header(**hdr)

    def alloc(self, n=1, new=False):
        if n == 1:
            self.b += [0, 0x40 if new else 0]
        else:
            self.b += [0, 0x80 | (0x40 if new else 0) | (n - 1)]
        return self

    def free(self, *idx, delete=False, self_free=False, by_address=False):
        sel = (0x40 if delete else 0) | (0x20 if self_free or by_address else 0)
        if len(idx) > 1:
            sel |= 0x80 | (len(idx) - 1)
        self.b += [3, sel] + [b for i in idx for b in u16(i)]
        return self

    # kinds: 0 NULL, 1 stack, 2 static, 3 freed, 4 interior, 5 nearby,
    # 6 other pool, 7 far; calls: 0 free, 1 delete, 2 handle, 3 retain,
    # 4 release, 5 refcount, 6 fm_free
    def bad(self, kind, call, which=0, off=0, flags=0):
        self.b += [5, kind, call] + list(u16(which)) + list(u16(off)) + [flags]
        return self

    def reserve(self, extra):
        self.b += [7, 1] + list(u16(extra))
        return self

    def reserve_exact(self, n):
        self.b += [7, 0] + list(u32(n))
        return self

    def trim(self):
        self.b += [8]
        return self

    def owns(self, *idx):
        self.b += [9] + [b for i in list(idx) + [0] * (8 - len(idx)) for b in u16(i)]
        return self

    def handle(self, i):
        self.b += [10] + list(u16(i))
        return self

    def resolve(self, flip_bit=0, made_up=0):
        self.b += [11, flip_bit] + list(u64(made_up))
        return self

    def retain(self, i):
        self.b += [12] + list(u16(i))
        return self

    def release(self, i, self_free=False):
        self.b += [13] + list(u16(i)) + [1 if self_free else 0]
        return self

    def refcount(self, i):
        self.b += [14] + list(u16(i))
        return self

    def foreach(self, free_some=False, pick=0, alloc_every=0):
        if alloc_every:  # allocate after every alloc_every visits (1..8)
            self.b += [15, 2 | (alloc_every - 1) << 2]
        else:  # free the items whose pattern seed matches pick's low bit
            self.b += [15, (1 if free_some else 0) | (pick & 1) << 2]
        return self

    def check(self):
        self.b += [16]
        return self

    def fail(self, nth=1, after=False):
        self.b += [17, (nth - 1) | (0x10 if after else 0)]
        return self

    def recover(self):
        self.b += [17, 0x80]
        return self

    def free_all_at_end(self):
        self.b += [18]
        return self

    def churn(self, bits):
        self.b += [19, bits]
        return self

    def reset(self, inside_foreach=False):  # every item at once; or refused in a walk
        self.b += [22, 1 if inside_foreach else 0]
        return self

    def alloc_n(self, n):  # 1..64 by fm_pool_alloc_n; 0: into out == NULL
        self.b += [20, 0xFF if n == 0 else n - 1]
        return self

    # entries: LIVE (the order's next live item) or bad(kind, param); orders:
    # 0 a run of the live array, 1 backwards, 2 random picks (start: the
    # seed), 3 every step-th; bad: entries from which byte on are bad ones
    # (0: 0xC0, 1: 0xF8, 2: none, 3: 0x80).
    def free_n(self, entries, order=0, bad=0, step=1, start=0, off=0, null_array=False):
        sel = order | bad << 2 | (step - 1) << 4
        if null_array:  # its 64 entry bytes are read all the same
            entries = [LIVE] * 64
        length = 0xFF if null_array else len(entries) - 1
        self.b += [21, sel, length] + list(u16(start)) + list(u16(off)) + list(entries)
        return self


# free_n entries: LIVE, or a bad one: 0 NULL, 1 stack, 2 static, 3 a
# remembered freed item, 4 an interior pointer of the order's next item, 5 one
# of an item the batch freed already, 6 such an item again, 7 another pool's
# item (odd param) or a far pointer. param 7 keeps the byte bad at every
# threshold but "none".
LIVE = 0
NUL, STACK, STATIC, FREED, INTERIOR_NEXT, INTERIOR_FREED, AGAIN, OTHER = range(8)


def bad(kind, param=7):
    return 0xC0 | param << 3 | kind


def align4096_trim_handles():
    """Items of 1000 bytes aligned to 4096: 63 to a 256 KiB chunk. Fill three
    chunks, take handles, free newest first (so older chunks go from full to
    partly used to empty while not current), trim, and check the stale
    handles before and after the slots are handed out again."""
    p = Pool(growth=LINEAR, align_shift=12, item_size=1000, initial=1).alloc(64).alloc(64)
    p.alloc(40).handle(0).handle(70).handle(150)
    for top in range(167, 0, -32):
        p.free(*range(top, max(top - 32, 0), -1))
    return p.trim().resolve().alloc(64).alloc(64).resolve().check().b


def batch_free_chunks(mutex=False):
    """Items of 1000 bytes aligned to 4096: 63 to a chunk. Three chunks full,
    one single free parks its slot, then batches in address order empty a
    chunk (full to empty in one run), free across chunk boundaries with bad
    entries in the middle of runs, and trim releases what they emptied."""
    p = Pool(growth=LINEAR, align_shift=12, item_size=1000, initial=1, mutex=mutex)
    p.alloc_n(64).alloc_n(64).alloc_n(61).free(70)
    p.free_n([LIVE] * 63, order=0, start=0)
    p.free_n([LIVE] * 20 + [bad(INTERIOR_NEXT), LIVE, bad(AGAIN, 0), LIVE, bad(NUL)] + [LIVE] * 30,
             order=0, bad=0, start=10)
    p.free_n([LIVE] * 40, order=1, bad=2, start=60)
    return p.trim().check().alloc_n(64).alloc_n(64).check().b


pool_seeds = {
    "basic": Pool().alloc(10).free(3).handle(0).free(0).resolve(5, 0x1234)
        .bad(3, 0).bad(4, 1, 0, 5).bad(0, 2).owns(0, 1, 2).check().b,
    "fixed-full": Pool(growth=FIXED, item_size=8, initial=4, max_cap=0x80).alloc(40)
        .reserve(100).free(0, 1, 2).trim().alloc(3).check().b,
    "max-capacity": Pool(growth=LINEAR, item_size=100, initial=3, max_cap=7, grow=2)
        .alloc(10).reserve(50).reserve_exact(7).free(1).alloc(2).check().b,
    "growth-faults": Pool(item_size=64, initial=4).alloc(60).fail(1).alloc(60).recover()
        .fail(2, after=True).reserve(3000).recover().reserve(2000).check().b,
    "refcounts-hooks": Pool(hooks=True, item_size=40).alloc(6, new=True).retain(0).retain(0)
        .refcount(0).release(0).release(0).release(0, self_free=True).free(1, delete=True)
        .free(0, delete=True, self_free=True).bad(3, 4, 0).bad(3, 3, 0).bad(3, 5, 0)
        .foreach(free_some=True).foreach().check().b,
    "align4096-trim-handles": align4096_trim_handles(),
    "system-prefault-other": Pool(system=True, prefault=True, other=True, item_size=3,
                                  align_shift=0).alloc(20).bad(6, 0).bad(7, 1, flags=1)
        .bad(1, 3).bad(2, 5, flags=3).bad(5, 0, 3, 0xFFFF, 1).bad(5, 1, 0, 7).trim().check().b,
    "retain-faults": Pool(item_size=16).alloc(5).fail(1).retain(2).recover().retain(2)
        .refcount(2).check().b,
    "leak-at-destroy": Pool(hooks=True, item_size=200).alloc(30, new=True).churn(0xA5)
        .churn(0x0F).check().b,
    "foreach-growth": Pool(item_size=2000, initial=1).alloc(28).foreach(alloc_every=1)
        .foreach(alloc_every=3).fail(1).foreach(alloc_every=1).recover().foreach(free_some=True)
        .check().b,
    "free-all-silent": Pool(silent=True, item_size=1).alloc(50).free_all_at_end().check().b,
    "invalid-desc": Pool(item_size=0).b,
    "invalid-factor": Pool(growth=GEOMETRIC_FACTOR, grow=0).b,
    "create-fault": Pool(create_fail=2).alloc(1).b,
    # FIXED: one chunk of 63 items of 1000 bytes aligned to 4096.
    "batch-alloc-fixed": Pool(growth=FIXED, align_shift=12, item_size=1000, initial=40)
        .alloc_n(30).alloc_n(30).alloc_n(30).alloc_n(0).free_n([LIVE] * 12, order=2, bad=2, start=7)
        .alloc_n(64).alloc_n(1).check().b,
    "batch-alloc-max-capacity": Pool(growth=LINEAR, item_size=100, initial=3, max_cap=100, grow=2)
        .alloc_n(64).alloc_n(64).alloc_n(5).free_n([LIVE] * 50, order=3, bad=2, step=3)
        .alloc_n(64).check().b,
    # Chunks of a few 2000-byte items: batches grow the pool several times,
    # until a refused growth stops one part-way.
    "batch-alloc-growth-faults": Pool(growth=LINEAR, item_size=2000, initial=1).alloc_n(64)
        .fail(1).alloc_n(64).recover().alloc_n(64).fail(3).alloc_n(64).recover()
        .fail(1, after=True).alloc_n(64).free_n([LIVE] * 64, order=1, bad=2, start=100)
        .alloc_n(64).recover().alloc_n(64).check().b,
    "batch-free-bad": Pool(other=True, item_size=40).alloc_n(50).free(3).free(9)
        .free_n([LIVE, bad(INTERIOR_NEXT, 0), LIVE, LIVE, bad(AGAIN, 0), bad(INTERIOR_FREED, 1),
                 bad(FREED, 0), bad(STACK, 2), LIVE, bad(STATIC, 5), bad(NUL, 0),
                 bad(OTHER, 1), bad(OTHER, 0), LIVE, bad(INTERIOR_NEXT, 3), LIVE], order=0,
                start=4, off=5)
        .free_n([LIVE] * 3, null_array=True)
        .free_n([LIVE, 0xF0, 0x85, LIVE, 0xE6, 0xFC, LIVE, 0xAB, 0xC4], order=2, bad=3,
                start=0x1234, off=0xBEEF)
        .alloc_n(20).check().b,
    "batch-free-chunks": batch_free_chunks(),
    "batch-free-chunks-mutex": batch_free_chunks(mutex=True),
    "mutex-mixed": Pool(mutex=True, hooks=True, item_size=40).alloc(10).free(3).handle(0)
        .retain(1).release(1).bad(4, 0, 0, 5).bad(3, 0).foreach(free_some=True).churn(0xA5)
        .alloc_n(30).free_n([LIVE, bad(INTERIOR_NEXT), LIVE, bad(AGAIN, 0), LIVE] * 4, order=2)
        .resolve().trim().check().b,
    # fm_pool_reset: live items, handles and freed ones across chunks, then
    # frees of the dead items (double frees), the chunks filled again.
    "reset-handles": Pool(item_size=48, other=True).alloc(64).alloc(64).alloc(64).handle(0)
        .handle(100).free(5, 6, 7).reset().resolve().bad(3, 0).bad(3, 6).alloc(64).alloc(64)
        .handle(3).reset().resolve().churn(0x5A).check().b,
    "reset-hooks-mutex": Pool(mutex=True, hooks=True, item_size=40).alloc(30, new=True)
        .retain(2).reset(inside_foreach=True).reset().alloc(40).free(1, 2, 3, by_address=True)
        .reset().check().b,
    # 4 KiB chunks: many of them, freed by address, bad pointers through
    # fm_free, a reset and a trim.
    "small-chunks-fm-free": Pool(item_size=72, chunk=1, other=True).alloc(64).alloc(64)
        .free(*range(0, 40, 3), by_address=True).bad(1, 6).bad(2, 6).bad(4, 6, 0, 5).bad(6, 6)
        .bad(7, 6, flags=2).bad(5, 6, 3, 9, 1).reset().trim().alloc(30).check().b,
    "chunk-4096-aligned": Pool(item_size=1000, align_shift=12, chunk=1).alloc(20).reset()
        .alloc(20).check().b,
    "invalid-chunk": Pool(chunk=8).b,
}

# ------------------------------------------------------------------ arena

ARENA_RESERVE = {4096: 0, 10000: 1, 16384: 2, 65536: 3, 100000: 4, 262144: 5, 1 << 20: 6, 0: 7}
ARENA_STEP = {0: 0, 4096: 1, 5000: 2, 8192: 3, 65536: 4, 1 << 20: 5, 1: 6, 100000: 7}


class Arena:
    def __init__(self, chained=False, poison=False, reserve=65536, step=4096, create_fail=0,
                 create_fail_after=False):
        b0 = (1 if chained else 0) | (2 if poison else 0)
        b0 |= ARENA_RESERVE[reserve] << 2 | ARENA_STEP[step] << 5
        self.b = [b0, create_fail | (8 if create_fail_after else 0)]

    # size modes: ("small", n<64) ("medium", n<8192) ("large", u32)
    # ("huge", k) k: 0 SIZE_MAX-u16, 1 1<<(33+x), 2 end of reserve, 3 end of step
    def alloc(self, size=("small", 16), align=4, kind=0, elem=1, overflow=False):
        mode, v = size
        sel = kind | ({"small": 0, "medium": 1, "large": 2, "huge": 3}[mode] << 2)
        if overflow:
            sel |= 0x80
        ops = [0, sel]
        if mode == "small":
            ops += [v]
        elif mode == "medium":
            ops += list(u16(v))
        elif mode == "large":
            ops += list(u32(v))
        else:
            k, x = v
            ops += [k] + (list(u16(x)) if k == 0 else [x & 0xFF])
        ops += [align]  # low 4 bits: shift 0..12, 13 default, 14 odd, 15 too big
        if kind == 3:
            ops += [elem - 1] + ([0] if overflow else [])
        self.b += ops
        return self

    def mark(self):
        self.b += [4]
        return self

    def rewind(self, i, keep=True):
        self.b += [6] + list(u16(i)) + [1 if keep else 0]
        return self

    def bad_rewind(self, kind, operand=0):  # 0 foreign, 1 above top, 2/3 stale
        self.b += [7, kind] + list(u16(operand))
        return self

    def reset(self):
        self.b += [8]
        return self

    def decommit(self, keep=None):
        self.b += [9, 0] if keep is None else [9, 1] + list(u32(keep))
        return self

    def fail(self, nth=1, after=False):
        self.b += [10, (nth - 1) | (0x10 if after else 0)]
        return self

    def recover(self):
        self.b += [10, 0x80]
        return self

    def check(self):
        self.b += [11]
        return self


arena_seeds = {
    "vm-marks": Arena().alloc().mark().alloc(("medium", 3000), 6).mark()
        .alloc(("small", 0), 12).alloc(kind=2).rewind(1).bad_rewind(2, 0).rewind(0, keep=False)
        .bad_rewind(0).bad_rewind(1, 5).alloc(kind=3, elem=8).reset().bad_rewind(2, 1)
        .decommit().check().b,
    "vm-full": Arena(reserve=16384).alloc(("medium", 8000)).alloc(("huge", (2, 0)))
        .alloc(("huge", (2, 0xF0))).alloc(("large", 20000)).alloc(("huge", (3, 1)))
        .reset().alloc(("huge", (2, 0)), 0).check().b,
    "vm-poison-decommit": Arena(poison=True, reserve=262144, step=5000)
        .alloc(("large", 100000)).mark().alloc(("large", 50000)).rewind(0).decommit(20000)
        .decommit().alloc(("large", 120000)).check().b,
    "invalid-aligns-huge": Arena(reserve=0, step=0).alloc(align=14).alloc(align=15)
        .alloc(align=13).alloc(("huge", (0, 5))).alloc(("huge", (1, 30)))
        .alloc(kind=3, elem=7, overflow=True).alloc(kind=3, align=0x1E).check().b,
    "chained-faults": Arena(chained=True, reserve=262144, step=8192).alloc(("medium", 5000))
        .fail(1).alloc(("medium", 7000)).recover().alloc(("medium", 7000)).mark()
        .alloc(("large", 30000)).rewind(0).alloc(("medium", 100)).decommit().check().b,
    "chained-cuts": None,  # below
    "chained-full": Arena(chained=True, poison=True, reserve=65536, step=4096)
        .alloc(("large", 40000)).alloc(("large", 40000)).alloc(("huge", (0, 0)))
        .reset().alloc(("large", 60000)).decommit(8192).check().b,
    "chained-create-fault": Arena(chained=True, create_fail=1).alloc().b,
    "invalid-desc": Arena(reserve=4096, step=65536).b,
    "chained-too-small": Arena(chained=True, reserve=4096, step=4096).b,
}



def chained_cuts():
    """Rewinds at rising positions grow the cut record past its 16 inline
    entries; a fault then makes it forget the oldest cut."""
    a = Arena(chained=True, reserve=1 << 20, step=4096)
    for k in range(40):
        if k in (16, 33):  # the 17th cut grows the record: refuse it
            a.fail(1)
        a.alloc(("small", 8)).mark().alloc(("small", 8)).rewind(k)
        a.bad_rewind(2, k).recover()
    return a.reset().bad_rewind(3, 1).check().b


arena_seeds["chained-cuts"] = chained_cuts()

# ------------------------------------------------------------ frame arena

FRAMES = {2: 0, 3: 1, 4: 2, 0: 3, 1: 4, 9: 5}
FRAME_RESERVE = {16384: 0, 65536: 1, 100000: 2, 262144: 3}
FRAME_STEP = {4096: 0, 8192: 1, 5000: 2, 16384: 3}


class Frames:
    def __init__(self, frames=2, chained=False, poison=False, reserve=65536, step=4096,
                 create_fail=0):
        b0 = FRAMES[frames] | (8 if chained else 0) | (16 if poison else 0)
        b0 |= FRAME_RESERVE[reserve] << 5
        self.b = [b0, create_fail | FRAME_STEP[step] << 4]

    def alloc(self, size=16, align=4, zeroed=False, mode=None):
        code = 3 if zeroed else 0
        if mode == "end":  # at the end of the reserve, size delta
            self.b += [code, 3, size & 0xFF, align]
        elif size < 64:
            self.b += [code, size << 2, align]
        elif size < 4096:
            self.b += [code, 1] + list(u16(size)) + [align]
        else:
            self.b += [code, 2] + list(u32(size)) + [align]
        return self

    def advance(self, n=1):
        self.b += [4] * n
        return self

    def mark(self):
        self.b += [6]
        return self

    def rewind(self, i):
        self.b += [7] + list(u16(i))
        return self

    def old_rewind(self, i):
        self.b += [8] + list(u16(i))
        return self

    def fail(self, nth=1, after=False):
        self.b += [9, 0x40 | (nth - 1) | (0x10 if after else 0)]
        return self

    def recover(self):
        self.b += [9, 0xC0]
        return self

    def check(self):
        self.b += [9, 0]
        return self


frame_seeds = {
    "double-buffered": Frames().alloc(100).alloc(2000).advance().alloc(50, zeroed=True)
        .advance().alloc(10).advance(2).check().b,
    "triple-marks": Frames(frames=3, poison=True).alloc(64).mark().alloc(300).alloc(0)
        .rewind(0).mark().alloc(40).advance().mark().alloc(8).advance(3).old_rewind(0)
        .old_rewind(1).check().b,
    "quad-chained-faults": Frames(frames=4, chained=True, reserve=100000, step=8192)
        .alloc(5000).fail(1).alloc(9000).recover().alloc(9000).advance().alloc(20000)
        .advance().alloc(1, mode="end").advance(3).check().b,
    "full-frame": Frames(reserve=16384).alloc(16000).alloc(0, mode="end").alloc(400)
        .advance().alloc(16384).advance().alloc(16384).check().b,
    "bad-align": Frames(frames=0).alloc(8, align=14).alloc(8, align=13).advance().check().b,
    "chained-create-fault": Frames(frames=3, chained=True, create_fail=3).alloc(8).b,
    "invalid-frames": Frames(frames=1).b,
    "too-many-frames": Frames(frames=9).b,
}

if __name__ == "__main__":
    write("pool", pool_seeds)
    write("arena", arena_seeds)
    write("frame_arena", frame_seeds)
    for name, seeds in (("pool", pool_seeds), ("arena", arena_seeds), ("frame_arena", frame_seeds)):
        print(f"corpus/{name}: {len(seeds)} seeds")
