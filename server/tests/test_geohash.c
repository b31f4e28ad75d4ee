/* Unit tests of the geo encoding (geohash.c) against figures Redis 7.0 gives for
 * the same points (its documentation's Palermo and Catania: ZSCORE after GEOADD,
 * GEODIST, GEOPOS), the cell walk and the shapes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "geohash.h"

static void test_scores_as_redis(void **state)
{
    (void)state;
    assert_true(sv_geohash_score(13.361389, 38.115556) == 3479099956230698ULL);
    assert_true(sv_geohash_score(15.087269, 37.502669) == 3479447370796909ULL);
    double lon, lat;
    assert_true(sv_geohash_decode_score(3479099956230698.0, &lon, &lat));
    /* GEOPOS Sicily Palermo: 13.36138933897018433 38.11555639549629859 */
    char buf[64];
    snprintf(buf, sizeof(buf), "%.17Lf", (long double)lon);
    assert_string_equal(buf, "13.36138933897018433");
    snprintf(buf, sizeof(buf), "%.17Lf", (long double)lat);
    assert_string_equal(buf, "38.11555639549629859");
    /* GEODIST Sicily Palermo Catania: 166274.1516 */
    double lon2, lat2;
    sv_geohash_decode_score(3479447370796909.0, &lon2, &lat2);
    double d = sv_geo_distance(lon, lat, lon2, lat2);
    assert_true(llrint(d * 10000.0) == 1662741516LL);
    /* out of range: no hash */
    sv_geohash h;
    assert_false(sv_geohash_encode(181, 0, SV_GEO_LAT_MIN, SV_GEO_LAT_MAX, 26, &h));
    assert_false(sv_geohash_encode(0, 86, SV_GEO_LAT_MIN, SV_GEO_LAT_MAX, 26, &h));
}

static void test_cells_cover_the_radius(void **state)
{
    (void)state;
    /* every point within the radius lies in one of the cells searched */
    sv_geoshape s = {0, 15.0, 37.0, 1000.0, 200.0, 0, 0};
    sv_geohash cells[9];
    sv_geo_cells(&s, cells);
    int found_all = 1;
    for (double dlon = -3; dlon <= 3; dlon += 0.25)
        for (double dlat = -2; dlat <= 2; dlat += 0.25) {
            double lon = 15.0 + dlon, lat = 37.0 + dlat, dist;
            uint64_t score = sv_geohash_score(lon, lat);
            double plon, plat;
            sv_geohash_decode_score((double)score, &plon, &plat);
            if (!sv_geo_within(&s, plon, plat, &dist)) continue;
            int in = 0;
            for (int i = 0; i < 9; i++) {
                if (!cells[i].bits && !cells[i].step) continue;
                uint64_t lo, hi;
                sv_geo_cell_scores(cells[i], &lo, &hi);
                if (score >= lo && score < hi) in = 1;
            }
            found_all &= in;
        }
    assert_true(found_all);
    /* a box: inside by both half-sides, outside past one */
    sv_geoshape b = {1, 0, 0, 1000.0, 0, 100.0, 50.0};
    double dist;
    assert_true(sv_geo_within(&b, 0.4, 0.2, &dist));
    assert_false(sv_geo_within(&b, 0.5, 0.0, &dist));
    assert_false(sv_geo_within(&b, 0.0, 0.3, &dist));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scores_as_redis),
        cmocka_unit_test(test_cells_cover_the_radius),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
