/* A game's pool with framemem_telemetry (framemem::telemetry): a config
 * applied to its desc, grow-ahead and telemetry per frame, the CSV written
 * and read back, a tuned config written; exits 0 when everything behaves as
 * documented. */
#include <framemem/config.h>
#include <framemem/framemem.h>
#include <framemem/telemetry.h>

#include <stdio.h>

typedef struct bullet {
    float x, y, vx, vy;
    char trail[240]; /* a few hundred to a 64 KiB chunk: the pool grows */
} bullet;

int main(int argc, char **argv) {
    (void)argc;
    char err[512], csv[4200], ini[4200];
    snprintf(csv, sizeof csv, "%s.csv", argv[0]);
    snprintf(ini, sizeof ini, "%s.ini", argv[0]);
    static const char text[] = "[pool.bullets]\ninitial_capacity = 64\ngrow_ahead = true\n";
    fm_config *cfg = fm_config_load_mem(text, sizeof text - 1, "bullets.ini", NULL, err, sizeof err);
    fm_pool_desc d = FM_POOL_DESC(bullet, .name = "bullets");
    if (!cfg || fm_config_apply_pool(cfg, &d) != 1 || !d.grow_ahead) return 1;
    fm_pool *bullets = fm_pool_create(&d);
    fm_telemetry *tel = fm_telemetry_create(&(fm_telemetry_desc){.frames = 16});
    if (!bullets || !tel || fm_telemetry_add_pool(tel, bullets) != 0) return 2;
    void *live[1600];
    for (int f = 0; f < 16; f++) {
        for (int i = 0; i < 100; i++) live[f * 100 + i] = fm_pool_alloc(bullets);
        fm_telemetry_grow_ahead(tel);
        fm_telemetry_frame_end(tel);
    }
    const fm_telemetry_source *s = fm_telemetry_get_source(tel, 0);
    if (s->total_allocs != 1600 || s->total_ahead_grow_events == 0) return 3;
    if (!fm_telemetry_write_csv(tel, csv, err, sizeof err)) return 4;
    fm_telemetry *back = fm_telemetry_read_csv(csv, err, sizeof err);
    if (!back || fm_telemetry_frame_count(back) != 16) return 5;
    if (!fm_config_write_tuned(back, ini, 1.25, err, sizeof err)) return 6;
    for (int i = 0; i < 1600; i++) fm_pool_free(bullets, live[i]);
    fm_telemetry_destroy(back);
    fm_telemetry_destroy(tel);
    fm_pool_destroy(bullets);
    fm_config_destroy(cfg);
    remove(csv);
    remove(ini);
    puts("telemetry consumer ok");
    return 0;
}
