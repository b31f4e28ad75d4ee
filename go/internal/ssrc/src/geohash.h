/* geohash: Redis's geo encoding — longitude and latitude (latitude limited to the
 * Web Mercator range, +-85.05112878) as 26 bits each, interleaved into a 52-bit
 * integer that is the member's sorted-set score — and the search helpers on top:
 * the 9 cells around a point at the step its radius needs, and Redis's haversine
 * distance. Every formula and its order of floating-point operations is Redis's,
 * so scores, coordinates, distances and the cells searched agree bit for bit. */
#ifndef SV_GEOHASH_H
#define SV_GEOHASH_H

#include <stdint.h>

#define SV_GEO_STEP_MAX 26
#define SV_GEO_LAT_MIN -85.05112878
#define SV_GEO_LAT_MAX 85.05112878
#define SV_GEO_LONG_MIN -180
#define SV_GEO_LONG_MAX 180

typedef struct sv_geohash {
    uint64_t bits;
    uint8_t step;
} sv_geohash;

typedef struct sv_geoarea {
    sv_geohash hash;
    double lon_min, lon_max, lat_min, lat_max;
} sv_geoarea;

/* 0 when the point is outside the ranges. lat_min/lat_max select the range (the
 * Mercator one for scores, +-90 for GEOHASH's strings). */
int sv_geohash_encode(double lon, double lat, double lat_min, double lat_max, int step, sv_geohash *h);
/* The score of a point: its 26-step hash aligned to 52 bits. */
uint64_t sv_geohash_score(double lon, double lat);
/* A score back to the centre of its cell (0 for a score that is no hash). */
int sv_geohash_decode_score(double score, double *lon, double *lat);
double sv_geo_distance(double lon1, double lat1, double lon2, double lat2);
double sv_geo_lat_distance(double lat1, double lat2);

/* A search shape, in its unit (conversion: metres per unit). */
typedef struct sv_geoshape {
    int box; /* 0 radius, 1 box */
    double lon, lat, conversion;
    double radius, width, height;
} sv_geoshape;
/* The cells to scan, in Redis's order (centre, N, S, E, W, NE, NW, SE, SW); a
 * zero cell (bits 0, step 0) is skipped. */
void sv_geo_cells(const sv_geoshape *s, sv_geohash cells[9]);
/* The [min, max) score range of a cell. */
void sv_geo_cell_scores(sv_geohash h, uint64_t *min, uint64_t *max);
/* Whether a point is in the shape; *dist its distance from the centre (metres). */
int sv_geo_within(const sv_geoshape *s, double lon, double lat, double *dist);

#endif
