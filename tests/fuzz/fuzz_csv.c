/*
 * tests/fuzz/fuzz_csv.c: the telemetry CSV reader (framemem/telemetry.h) on
 * arbitrary bytes.
 *
 * Model: the reader either fails with "name:line: message" or returns a
 * telemetry object whose frames increase strictly, every frame has a sample
 * of every source (zeros before a source's first row), and every source's totals equal the sums over the frames
 * (the ring holds the whole file). Writing it back as CSV and reading that
 * gives the same frames and samples, and writing again gives the same bytes.
 */
#include "fuzz_support.h"

#include "framemem/telemetry.h"

static char *to_csv(const fm_telemetry *t, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    FZ_CHECK(f != NULL);
    FZ_CHECK(fm_telemetry_write_csv_file(t, f));
    FZ_CHECK(fclose(f) == 0);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_errors_begin();
    char err[512] = "";
    fm_telemetry *t = fm_telemetry_read_csv_mem((const char *)data, size, "fuzz.csv", err, sizeof err);
    if (!t) {
        FZ_CHECK(strncmp(err, "fuzz.csv:", 9) == 0);
        const char *q = err + 9;
        FZ_CHECK(*q >= '0' && *q <= '9');
        while (*q >= '0' && *q <= '9') q++;
        FZ_CHECK(q[0] == ':' && q[1] == ' ' && q[2]);
        return 0;
    }
    uint32_t frames = fm_telemetry_frame_count(t), sources = fm_telemetry_source_count(t);
    FZ_CHECK(frames >= 1);
    FZ_CHECK(sources >= 1 && sources <= FM_TELEMETRY_MAX_SOURCES);
    FZ_CHECK_EQ(fm_telemetry_frames_pushed(t), frames);
    for (uint32_t i = 1; i < frames; i++)
        FZ_CHECK(fm_telemetry_get_frame(t, i)->frame > fm_telemetry_get_frame(t, i - 1)->frame);
    for (uint32_t s = 0; s < sources; s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(t, s);
        FZ_CHECK(si->chunk_items >= 1);
        uint64_t allocs = 0, frees = 0, grow = 0;
        for (uint32_t i = 0; i < frames; i++) {
            const fm_telemetry_sample *x = fm_telemetry_get_sample(t, i, s);
            FZ_CHECK(x != NULL);
            allocs += x->allocs;
            frees += x->frees;
            grow += x->grow_events;
        }
        FZ_CHECK_EQ(si->total_allocs, allocs);
        FZ_CHECK_EQ(si->total_frees, frees);
        FZ_CHECK_EQ(si->total_grow_events, grow);
    }
    size_t len1, len2;
    char *csv1 = to_csv(t, &len1);
    char err2[512] = "";
    fm_telemetry *u = fm_telemetry_read_csv_mem(csv1, len1, "rewritten.csv", err2, sizeof err2);
    if (!u) FZ_FAIL("rewritten CSV does not read back: %s", err2);
    FZ_CHECK_EQ(fm_telemetry_frame_count(u), frames);
    FZ_CHECK_EQ(fm_telemetry_source_count(u), sources);
    for (uint32_t i = 0; i < frames; i++) {
        const fm_telemetry_frame *a = fm_telemetry_get_frame(t, i), *b = fm_telemetry_get_frame(u, i);
        FZ_CHECK(memcmp(a, b, sizeof *a) == 0);
        for (uint32_t s = 0; s < sources; s++)
            FZ_CHECK(memcmp(fm_telemetry_get_sample(t, i, s), fm_telemetry_get_sample(u, i, s),
                            sizeof(fm_telemetry_sample)) == 0);
    }
    char *csv2 = to_csv(u, &len2);
    FZ_CHECK_EQ(len1, len2);
    FZ_CHECK(memcmp(csv1, csv2, len1) == 0);
    free(csv1);
    free(csv2);
    fm_telemetry_destroy(u);
    fm_telemetry_destroy(t);
    return 0;
}
