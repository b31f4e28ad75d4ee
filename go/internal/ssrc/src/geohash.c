/* geohash: see geohash.h. */
#include "geohash.h"

#include <math.h>
#include <stddef.h>

#define D_R (M_PI / 180.0)
static const double EARTH_RADIUS_M = 6372797.560856;
static const double MERCATOR_MAX = 20037726.37;

static uint64_t interleave(uint32_t xlo, uint32_t ylo)
{
    static const uint64_t B[] = {0x5555555555555555ULL, 0x3333333333333333ULL, 0x0F0F0F0F0F0F0F0FULL,
                                 0x00FF00FF00FF00FFULL, 0x0000FFFF0000FFFFULL};
    static const unsigned S[] = {1, 2, 4, 8, 16};
    uint64_t x = xlo, y = ylo;
    for (int i = 4; i >= 0; i--) {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    return x | (y << 1);
}

static uint64_t deinterleave(uint64_t v)
{
    static const uint64_t B[] = {0x5555555555555555ULL, 0x3333333333333333ULL, 0x0F0F0F0F0F0F0F0FULL,
                                 0x00FF00FF00FF00FFULL, 0x0000FFFF0000FFFFULL, 0x00000000FFFFFFFFULL};
    static const unsigned S[] = {0, 1, 2, 4, 8, 16};
    uint64_t x = v, y = v >> 1;
    for (int i = 0; i < 6; i++) {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    return x | (y << 32);
}

int sv_geohash_encode(double lon, double lat, double lat_min, double lat_max, int step, sv_geohash *h)
{
    if (step > 32 || step == 0) return 0;
    if (lon > SV_GEO_LONG_MAX || lon < SV_GEO_LONG_MIN || lat > SV_GEO_LAT_MAX || lat < SV_GEO_LAT_MIN) return 0;
    h->bits = 0;
    h->step = (uint8_t)step;
    if (lat < lat_min || lat > lat_max) return 0;
    double lat_off = (lat - lat_min) / (lat_max - lat_min);
    double lon_off = (lon - SV_GEO_LONG_MIN) / (SV_GEO_LONG_MAX - SV_GEO_LONG_MIN);
    lat_off *= (double)(1ULL << step);
    lon_off *= (double)(1ULL << step);
    h->bits = interleave((uint32_t)lat_off, (uint32_t)lon_off);
    return 1;
}

static uint64_t align52(sv_geohash h) { return h.bits << (52 - h.step * 2); }

uint64_t sv_geohash_score(double lon, double lat)
{
    sv_geohash h = {0}; /* encode leaves it untouched for out-of-range input: score 0 then */
    sv_geohash_encode(lon, lat, SV_GEO_LAT_MIN, SV_GEO_LAT_MAX, SV_GEO_STEP_MAX, &h);
    return align52(h);
}

static int decode(sv_geohash h, sv_geoarea *a)
{
    if (!h.bits && !h.step) return 0;
    a->hash = h;
    uint64_t sep = deinterleave(h.bits);
    double lat_scale = SV_GEO_LAT_MAX - SV_GEO_LAT_MIN, lon_scale = SV_GEO_LONG_MAX - SV_GEO_LONG_MIN;
    uint32_t ilat = (uint32_t)sep, ilon = (uint32_t)(sep >> 32);
    a->lat_min = SV_GEO_LAT_MIN + (ilat * 1.0 / (double)(1ull << h.step)) * lat_scale;
    a->lat_max = SV_GEO_LAT_MIN + ((ilat + 1) * 1.0 / (double)(1ull << h.step)) * lat_scale;
    a->lon_min = SV_GEO_LONG_MIN + (ilon * 1.0 / (double)(1ull << h.step)) * lon_scale;
    a->lon_max = SV_GEO_LONG_MIN + ((ilon + 1) * 1.0 / (double)(1ull << h.step)) * lon_scale;
    return 1;
}

int sv_geohash_decode_score(double score, double *lon, double *lat)
{
    /* Redis casts the double to uint64_t; what gcc's conversion gives on x86-64,
     * without the undefined behaviour, for scores no GEOADD writes (ZADD'ed ones) */
    uint64_t bits;
    if (score >= 0 && score < 18446744073709551616.0) bits = (uint64_t)score;
    else if (score < 0 && score >= -9223372036854775808.0) bits = (uint64_t)(int64_t)score;
    else if (score >= 18446744073709551616.0) bits = 0;
    else bits = 0x8000000000000000ULL;
    sv_geoarea a;
    if (!decode((sv_geohash){bits, SV_GEO_STEP_MAX}, &a)) return 0;
    double x = (a.lon_min + a.lon_max) / 2, y = (a.lat_min + a.lat_max) / 2;
    if (x > SV_GEO_LONG_MAX) x = SV_GEO_LONG_MAX;
    if (x < SV_GEO_LONG_MIN) x = SV_GEO_LONG_MIN;
    if (y > SV_GEO_LAT_MAX) y = SV_GEO_LAT_MAX;
    if (y < SV_GEO_LAT_MIN) y = SV_GEO_LAT_MIN;
    *lon = x;
    *lat = y;
    return 1;
}

static double deg_rad(double a) { return a * D_R; }
static double rad_deg(double a) { return a / D_R; }

double sv_geo_lat_distance(double lat1, double lat2) { return EARTH_RADIUS_M * fabs(deg_rad(lat2) - deg_rad(lat1)); }

double sv_geo_distance(double lon1d, double lat1d, double lon2d, double lat2d)
{
    double lon1r = deg_rad(lon1d), lon2r = deg_rad(lon2d);
    double v = sin((lon2r - lon1r) / 2);
    if (v == 0.0) return sv_geo_lat_distance(lat1d, lat2d); /* same meridian: no rounding error */
    double lat1r = deg_rad(lat1d), lat2r = deg_rad(lat2d);
    double u = sin((lat2r - lat1r) / 2);
    double a = u * u + cos(lat1r) * cos(lat2r) * v * v;
    return 2.0 * EARTH_RADIUS_M * asin(sqrt(a));
}

static int steps_for_radius(double range_m, double lat)
{
    if (range_m == 0) return 26;
    int step = 1;
    while (range_m < MERCATOR_MAX) {
        range_m *= 2;
        step++;
    }
    step -= 2; /* so that the range fits in most cases */
    if (lat > 66 || lat < -66) {
        step--;
        if (lat > 80 || lat < -80) step--;
    }
    if (step < 1) step = 1;
    if (step > 26) step = 26;
    return step;
}

static void move_x(sv_geohash *h, int d)
{
    if (d == 0) return;
    uint64_t x = h->bits & 0xaaaaaaaaaaaaaaaaULL, y = h->bits & 0x5555555555555555ULL;
    uint64_t zz = 0x5555555555555555ULL >> (64 - h->step * 2);
    if (d > 0) x = x + (zz + 1);
    else {
        x = x | zz;
        x = x - (zz + 1);
    }
    x &= (0xaaaaaaaaaaaaaaaaULL >> (64 - h->step * 2));
    h->bits = x | y;
}

static void move_y(sv_geohash *h, int d)
{
    if (d == 0) return;
    uint64_t x = h->bits & 0xaaaaaaaaaaaaaaaaULL, y = h->bits & 0x5555555555555555ULL;
    uint64_t zz = 0xaaaaaaaaaaaaaaaaULL >> (64 - h->step * 2);
    if (d > 0) y = y + (zz + 1);
    else {
        y = y | zz;
        y = y - (zz + 1);
    }
    y &= (0x5555555555555555ULL >> (64 - h->step * 2));
    h->bits = x | y;
}

/* cells[]: 0 centre, 1 N, 2 S, 3 E, 4 W, 5 NE, 6 NW, 7 SE, 8 SW */
static void neighbours(sv_geohash h, sv_geohash c[9])
{
    static const int dx[9] = {0, 0, 0, 1, -1, 1, -1, 1, -1}, dy[9] = {0, 1, -1, 0, 0, 1, 1, -1, -1};
    for (int i = 0; i < 9; i++) {
        c[i] = h;
        move_x(&c[i], dx[i]);
        move_y(&c[i], dy[i]);
    }
}

void sv_geo_cells(const sv_geoshape *s, sv_geohash c[9])
{
    /* the bounding box of the shape */
    double height = s->conversion * (s->box ? s->height / 2 : s->radius);
    double width = s->conversion * (s->box ? s->width / 2 : s->radius);
    const double lat_delta = rad_deg(height / EARTH_RADIUS_M);
    const double lon_delta_top = rad_deg(width / EARTH_RADIUS_M / cos(deg_rad(s->lat + lat_delta)));
    const double lon_delta_bottom = rad_deg(width / EARTH_RADIUS_M / cos(deg_rad(s->lat - lat_delta)));
    int south = s->lat < 0;
    double min_lon = south ? s->lon - lon_delta_bottom : s->lon - lon_delta_top;
    double max_lon = south ? s->lon + lon_delta_bottom : s->lon + lon_delta_top;
    double min_lat = s->lat - lat_delta, max_lat = s->lat + lat_delta;
    double radius_m = s->box ? sqrt((s->width / 2) * (s->width / 2) + (s->height / 2) * (s->height / 2)) : s->radius;
    radius_m *= s->conversion;
    int steps = steps_for_radius(radius_m, s->lat);
    sv_geohash h;
    sv_geoarea area;
    sv_geohash_encode(s->lon, s->lat, SV_GEO_LAT_MIN, SV_GEO_LAT_MAX, steps, &h);
    neighbours(h, c);
    decode(h, &area);
    /* a step smaller when the neighbours do not cover the box */
    sv_geoarea n, so, e, w;
    decode(c[1], &n);
    decode(c[2], &so);
    decode(c[3], &e);
    decode(c[4], &w);
    int decrease = n.lat_max < max_lat || so.lat_min > min_lat || e.lon_max < max_lon || w.lon_min > min_lon;
    if (steps > 1 && decrease) {
        steps--;
        sv_geohash_encode(s->lon, s->lat, SV_GEO_LAT_MIN, SV_GEO_LAT_MAX, steps, &h);
        neighbours(h, c);
        decode(h, &area);
    }
    /* cells entirely outside the box are not searched */
    if (steps >= 2) {
        static const sv_geohash zero = {0, 0};
        if (area.lat_min < min_lat) c[2] = c[8] = c[7] = zero;
        if (area.lat_max > max_lat) c[1] = c[5] = c[6] = zero;
        if (area.lon_min < min_lon) c[4] = c[8] = c[6] = zero;
        if (area.lon_max > max_lon) c[3] = c[7] = c[5] = zero;
    }
}

void sv_geo_cell_scores(sv_geohash h, uint64_t *min, uint64_t *max)
{
    *min = align52(h);
    h.bits++;
    *max = align52(h);
}

int sv_geo_within(const sv_geoshape *s, double lon, double lat, double *dist)
{
    if (!s->box) {
        *dist = sv_geo_distance(s->lon, s->lat, lon, lat);
        return *dist <= s->radius * s->conversion;
    }
    double w = s->width * s->conversion, h = s->height * s->conversion;
    if (sv_geo_lat_distance(lat, s->lat) > h / 2) return 0;
    if (sv_geo_distance(lon, lat, s->lon, lat) > w / 2) return 0;
    *dist = sv_geo_distance(s->lon, s->lat, lon, lat);
    return 1;
}
