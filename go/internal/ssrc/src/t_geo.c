/* t_geo: the geo commands on sorted sets whose scores are geohash.c's 52-bit
 * cells — GEOADD GEOPOS GEODIST GEOHASH GEOSEARCH GEOSEARCHSTORE GEORADIUS
 * GEORADIUSBYMEMBER and the _RO forms — with Redis 7.0's argument order, errors and
 * reply formats (distances with 4 decimals as Redis rounds them, coordinates in
 * Redis's "human" long-double form). A search scans the same cells in the same
 * order as Redis, so even unsorted results come in Redis's order. */
#include <math.h>
#include <stdio.h>

#include "geohash.h"
#include "server.h"

static int get_lonlat(sv_ctx *c, sv_str *argv, double *lon, double *lat)
{
    if (!sv_get_double(c, argv[0], lon) || !sv_get_double(c, argv[1], lat)) return 0;
    if (*lon < SV_GEO_LONG_MIN || *lon > SV_GEO_LONG_MAX || *lat < SV_GEO_LAT_MIN || *lat > SV_GEO_LAT_MAX) {
        sv_add_errorf(&c->r, "invalid longitude,latitude pair %f,%f", *lon, *lat);
        return 0;
    }
    return 1;
}

static double get_unit(sv_ctx *c, sv_str u)
{
    if (sv_eq(u, "m")) return 1;
    if (sv_eq(u, "km")) return 1000;
    if (sv_eq(u, "ft")) return 0.3048;
    if (sv_eq(u, "mi")) return 1609.34;
    sv_add_error(&c->r, "unsupported unit provided. please use M, KM, FT, MI");
    return -1;
}

static int get_number(sv_ctx *c, sv_str a, double *v, const char *msg)
{
    if (!sv_str2d(a.p, a.len, v)) {
        sv_add_error(&c->r, msg);
        return 0;
    }
    return 1;
}

/* Redis's fixedpoint_d2string(d, 4): rounded to a multiple of 0.0001 with llrint. */
static void add_distance(sv_ctx *c, double d)
{
    char buf[64];
    int n;
    if (d == 0) {
        n = snprintf(buf, sizeof(buf), "0.0000");
    } else {
        long long v = llrint(d * 10000.0);
        unsigned long long u = v < 0 ? (unsigned long long)0 - (unsigned long long)v : (unsigned long long)v;
        n = snprintf(buf, sizeof(buf), "%s%llu.%04llu", v < 0 ? "-" : "", u / 10000, u % 10000);
    }
    sv_add_bulk(&c->r, buf, (size_t)n);
}

/* Redis's addReplyHumanLongDouble: %.17Lf without trailing zeros; RESP3 a double. */
static void add_coord(sv_ctx *c, double v)
{
    char buf[128];
    size_t n = sv_ld2str(buf, sizeof(buf), (long double)v);
    if (c->r.proto >= 3) {
        sv_add_raw(&c->r, ",", 1);
        sv_add_raw(&c->r, buf, n);
        sv_add_raw(&c->r, "\r\n", 2);
    } else {
        sv_add_bulk(&c->r, buf, n);
    }
}

static int member_pos(sv_zset *z, sv_str m, double *lon, double *lat)
{
    sv_entry *e = z ? sv_dict_find(&z->d, m.p, m.len) : NULL;
    return e && sv_geohash_decode_score(e->u.d, lon, lat);
}

void sv_cmd_geoadd(sv_ctx *c, int argc, sv_str *argv)
{
    int xx = 0, nx = 0, i = 2;
    for (; i < argc; i++) {
        if (sv_eq(argv[i], "nx")) nx = 1;
        else if (sv_eq(argv[i], "xx")) xx = 1;
        else if (!sv_eq(argv[i], "ch")) break;
    }
    if ((argc - i) % 3 || (xx && nx)) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    int n = (argc - i) / 3;
    /* ZADD key [options] score member ..., the score of each point its 52-bit cell */
    int zargc = i + n * 2;
    sv_str *zargv = sv_malloc(sizeof(sv_str) * (size_t)zargc);
    char (*scores)[24] = sv_malloc(24 * (size_t)(n ? n : 1));
    zargv[0] = (sv_str){"zadd", 4};
    for (int k = 1; k < i; k++) zargv[k] = argv[k];
    for (int k = 0; k < n; k++) {
        double lon, lat;
        if (!get_lonlat(c, argv + i + k * 3, &lon, &lat)) goto out;
        size_t len = sv_ull2str(scores[k], sv_geohash_score(lon, lat));
        zargv[i + k * 2] = (sv_str){scores[k], len};
        zargv[i + k * 2 + 1] = argv[i + k * 3 + 2];
    }
    sv_cmd_zadd(c, zargc, zargv);
out:
    free(scores);
    free(zargv);
}

static int get_geo(sv_ctx *c, sv_str key, sv_zset **z)
{
    sv_entry *e = NULL;
    int r = sv_db_get_typed(c, key, SV_T_ZSET, &e);
    *z = r == 1 ? e->val : NULL;
    return r;
}

void sv_cmd_geopos(sv_ctx *c, int argc, sv_str *argv)
{
    sv_zset *z;
    if (get_geo(c, argv[1], &z) < 0) return;
    sv_add_array(&c->r, argc - 2);
    for (int j = 2; j < argc; j++) {
        double lon, lat;
        if (!member_pos(z, argv[j], &lon, &lat)) {
            sv_add_null_array(&c->r);
            continue;
        }
        sv_add_array(&c->r, 2);
        add_coord(c, lon);
        add_coord(c, lat);
    }
}

void sv_cmd_geodist(sv_ctx *c, int argc, sv_str *argv)
{
    double to_m = 1;
    if (argc == 5) {
        if ((to_m = get_unit(c, argv[4])) < 0) return;
    } else if (argc > 5) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    sv_zset *z;
    int r = get_geo(c, argv[1], &z);
    if (r == 0) sv_add_null(&c->r);
    if (r != 1) return;
    double x1, y1, x2, y2;
    if (!member_pos(z, argv[2], &x1, &y1) || !member_pos(z, argv[3], &x2, &y2)) {
        sv_add_null(&c->r);
        return;
    }
    add_distance(c, sv_geo_distance(x1, y1, x2, y2) / to_m);
}

void sv_cmd_geohash(sv_ctx *c, int argc, sv_str *argv)
{
    static const char alphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
    sv_zset *z;
    if (get_geo(c, argv[1], &z) < 0) return;
    sv_add_array(&c->r, argc - 2);
    for (int j = 2; j < argc; j++) {
        double lon, lat;
        if (!member_pos(z, argv[j], &lon, &lat)) {
            sv_add_null(&c->r);
            continue;
        }
        /* the standard geohash: latitude over +-90, 11 characters (the last one 0) */
        sv_geohash h;
        sv_geohash_encode(lon, lat, -90, 90, 26, &h);
        char buf[11];
        for (int i = 0; i < 11; i++) buf[i] = alphabet[i == 10 ? 0 : (h.bits >> (52 - ((i + 1) * 5))) & 0x1f];
        sv_add_bulk(&c->r, buf, 11);
    }
}

/* ---- searches ---- */

typedef struct geopoint {
    double lon, lat, dist, score;
    const char *member;
    size_t mlen;
} geopoint;

typedef struct geoarray {
    geopoint *a;
    size_t used, cap;
} geoarray;

static int below_min(const sv_zsl_node *n, const void *arg) { return n->score < *(const double *)arg; }

/* The members of one cell's score range [min, max) inside the shape. */
static void cell_members(sv_zset *z, sv_geohash cell, const sv_geoshape *s, geoarray *ga, size_t limit)
{
    uint64_t lo, hi;
    sv_geo_cell_scores(cell, &lo, &hi);
    double min = (double)lo, max = (double)hi;
    size_t rank = sv_zsl_count_below(&z->zsl, below_min, &min);
    for (sv_zsl_node *x = sv_zsl_at(&z->zsl, rank + 1); x && x->e->u.d < max; x = x->level[0].forward) {
        geopoint p;
        if (sv_geohash_decode_score(x->e->u.d, &p.lon, &p.lat) && sv_geo_within(s, p.lon, p.lat, &p.dist)) {
            if (ga->used == ga->cap) {
                ga->cap = ga->cap ? ga->cap * 2 : 8;
                ga->a = sv_realloc(ga->a, ga->cap * sizeof(geopoint));
            }
            p.score = x->e->u.d;
            p.member = x->e->key;
            p.mlen = x->e->klen;
            ga->a[ga->used++] = p;
        }
        if (ga->used && limit && ga->used >= limit) break;
    }
}

static int by_dist_asc(const void *a, const void *b)
{
    const geopoint *x = a, *y = b;
    return x->dist > y->dist ? 1 : x->dist == y->dist ? 0 : -1;
}

static int by_dist_desc(const void *a, const void *b) { return -by_dist_asc(a, b); }

enum {
    G_COORDS = 1 << 0,   /* around coordinates (GEORADIUS) */
    G_MEMBER = 1 << 1,   /* around a member (GEORADIUSBYMEMBER) */
    G_NOSTORE = 1 << 2,  /* the _RO forms */
    G_SEARCH = 1 << 3,   /* GEOSEARCH's arguments */
    G_SEARCHSTORE = 1 << 4,
};

/* Redis 7.0's georadiusGeneric. */
static void georadius_generic(sv_ctx *c, int argc, sv_str *argv, int srcidx, int flags)
{
    sv_zset *z;
    if (get_geo(c, argv[srcidx], &z) < 0) return;
    int base = 2, storedist = 0, has_store = 0;
    sv_str storekey = {NULL, 0};
    sv_geoshape s;
    memset(&s, 0, sizeof(s));
    if (flags & G_COORDS) {
        base = 6;
        if (!get_lonlat(c, argv + 2, &s.lon, &s.lat)) return;
        if (!get_number(c, argv[4], &s.radius, "need numeric radius")) return;
        if (s.radius < 0) {
            sv_add_error(&c->r, "radius cannot be negative");
            return;
        }
        if ((s.conversion = get_unit(c, argv[5])) < 0) return;
    } else if (flags & G_MEMBER) {
        base = 5;
        if (z) {
            if (!member_pos(z, argv[2], &s.lon, &s.lat)) {
                sv_add_error(&c->r, "could not decode requested zset member");
                return;
            }
            if (!get_number(c, argv[3], &s.radius, "need numeric radius")) return;
            if (s.radius < 0) {
                sv_add_error(&c->r, "radius cannot be negative");
                return;
            }
            if ((s.conversion = get_unit(c, argv[4])) < 0) return;
        }
    } else if (flags & G_SEARCHSTORE) {
        base = 3;
        storekey = argv[1];
        has_store = 1;
    }
    int withdist = 0, withhash = 0, withcoords = 0, frommember = 0, fromloc = 0, byradius = 0, bybox = 0;
    int sort = 0, any = 0; /* sort: 0 none, 1 asc, 2 desc */
    long long count = 0;
    int rem = argc - base;
    for (int i = 0; i < rem; i++) {
        sv_str a = argv[base + i];
        if (sv_eq(a, "withdist")) withdist = 1;
        else if (sv_eq(a, "withhash")) withhash = 1;
        else if (sv_eq(a, "withcoord")) withcoords = 1;
        else if (sv_eq(a, "any")) any = 1;
        else if (sv_eq(a, "asc")) sort = 1;
        else if (sv_eq(a, "desc")) sort = 2;
        else if (sv_eq(a, "count") && i + 1 < rem) {
            if (!sv_get_ll(c, argv[base + i + 1], &count)) return;
            if (count <= 0) {
                sv_add_error(&c->r, "COUNT must be > 0");
                return;
            }
            i++;
        } else if ((sv_eq(a, "store") || sv_eq(a, "storedist")) && i + 1 < rem && !(flags & (G_NOSTORE | G_SEARCH))) {
            storekey = argv[base + i + 1];
            has_store = 1;
            storedist = sv_eq(a, "storedist");
            i++;
        } else if (sv_eq(a, "storedist") && (flags & G_SEARCH) && (flags & G_SEARCHSTORE)) {
            storedist = 1;
        } else if (sv_eq(a, "frommember") && i + 1 < rem && (flags & G_SEARCH) && !fromloc) {
            if (z && !member_pos(z, argv[base + i + 1], &s.lon, &s.lat)) {
                sv_add_error(&c->r, "could not decode requested zset member");
                return;
            }
            frommember = 1;
            i++;
        } else if (sv_eq(a, "fromlonlat") && i + 2 < rem && (flags & G_SEARCH) && !frommember) {
            if (!get_lonlat(c, argv + base + i + 1, &s.lon, &s.lat)) return;
            fromloc = 1;
            i += 2;
        } else if (sv_eq(a, "byradius") && i + 2 < rem && (flags & G_SEARCH) && !bybox) {
            if (!get_number(c, argv[base + i + 1], &s.radius, "need numeric radius")) return;
            if (s.radius < 0) {
                sv_add_error(&c->r, "radius cannot be negative");
                return;
            }
            if ((s.conversion = get_unit(c, argv[base + i + 2])) < 0) return;
            s.box = 0;
            byradius = 1;
            i += 2;
        } else if (sv_eq(a, "bybox") && i + 3 < rem && (flags & G_SEARCH) && !byradius) {
            if (!get_number(c, argv[base + i + 1], &s.width, "need numeric width") ||
                !get_number(c, argv[base + i + 2], &s.height, "need numeric height"))
                return;
            if (s.height < 0 || s.width < 0) {
                sv_add_error(&c->r, "height or width cannot be negative");
                return;
            }
            if ((s.conversion = get_unit(c, argv[base + i + 3])) < 0) return;
            s.box = 1;
            bybox = 1;
            i += 3;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    if (has_store && (withdist || withhash || withcoords)) {
        sv_add_errorf(&c->r, "%s is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
                      flags & G_SEARCHSTORE ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS");
        return;
    }
    if ((flags & G_SEARCH) && !(frommember || fromloc)) {
        sv_add_errorf(&c->r, "exactly one of FROMMEMBER or FROMLONLAT can be specified for %.*s", (int)argv[0].len, argv[0].p);
        return;
    }
    if ((flags & G_SEARCH) && !(byradius || bybox)) {
        sv_add_errorf(&c->r, "exactly one of BYRADIUS and BYBOX can be specified for %.*s", (int)argv[0].len, argv[0].p);
        return;
    }
    if (any && !count) {
        sv_add_error(&c->r, "the ANY argument requires COUNT argument");
        return;
    }
    if (!z) {
        if (has_store) {
            if (sv_db_delete_notify(c->sh, storekey) && !(flags & G_SEARCHSTORE)) sv_signal_modified_key(c->sh, storekey);
            sv_add_int(&c->r, 0);
        } else {
            sv_add_empty_array(&c->r);
        }
        return;
    }
    if (count != 0 && sort == 0 && !any) sort = 1;
    sv_geohash cells[9];
    sv_geo_cells(&s, cells);
    geoarray ga = {NULL, 0, 0};
    size_t limit = any ? (size_t)count : 0;
    /* Redis skips a cell only when it repeats the last one it scanned (and never
     * compares with the centre cell) */
    int last = 0;
    for (int i = 0; i < 9; i++) {
        if (!cells[i].bits && !cells[i].step) continue;
        if (last && cells[i].bits == cells[last].bits && cells[i].step == cells[last].step) continue;
        if (ga.used && limit && ga.used >= limit) break;
        cell_members(z, cells[i], &s, &ga, limit);
        last = i;
    }
    if (ga.used == 0 && !has_store) {
        sv_add_empty_array(&c->r);
        free(ga.a);
        return;
    }
    size_t n = count == 0 || ga.used < (size_t)count ? ga.used : (size_t)count;
    if (sort && ga.used) qsort(ga.a, ga.used, sizeof(geopoint), sort == 1 ? by_dist_asc : by_dist_desc);
    if (!has_store) {
        int opts = withdist + withcoords + withhash;
        sv_add_array(&c->r, (long long)n);
        for (size_t i = 0; i < n; i++) {
            geopoint *p = &ga.a[i];
            if (opts) sv_add_array(&c->r, opts + 1);
            sv_add_bulk(&c->r, p->member, p->mlen);
            if (withdist) add_distance(c, p->dist / s.conversion);
            if (withhash) sv_add_int(&c->r, (long long)p->score);
            if (withcoords) {
                sv_add_array(&c->r, 2);
                add_coord(c, p->lon);
                add_coord(c, p->lat);
            }
        }
    } else {
        sv_zset *dst = (sv_zset *)sv_obj_new(SV_T_ZSET);
        for (size_t i = 0; i < n; i++) {
            geopoint *p = &ga.a[i];
            sv_entry *m = sv_dict_add(&dst->d, p->member, p->mlen, NULL);
            m->u.d = storedist ? p->dist / s.conversion : p->score;
            sv_zsl_insert(&dst->zsl, m);
        }
        if (n) sv_db_set(c->sh, storekey, &dst->h, 0);
        else {
            sv_obj_free(&dst->h);
            sv_db_delete_notify(c->sh, storekey);
        }
        if (!(flags & G_SEARCHSTORE)) sv_signal_modified_key(c->sh, storekey); /* GEORADIUS: .touch NONE */
        sv_add_int(&c->r, (long long)n);
    }
    free(ga.a);
}

void sv_cmd_georadius(sv_ctx *c, int argc, sv_str *argv) { georadius_generic(c, argc, argv, 1, G_COORDS); }
void sv_cmd_georadiusbymember(sv_ctx *c, int argc, sv_str *argv) { georadius_generic(c, argc, argv, 1, G_MEMBER); }
void sv_cmd_georadius_ro(sv_ctx *c, int argc, sv_str *argv) { georadius_generic(c, argc, argv, 1, G_COORDS | G_NOSTORE); }
void sv_cmd_georadiusbymember_ro(sv_ctx *c, int argc, sv_str *argv) { georadius_generic(c, argc, argv, 1, G_MEMBER | G_NOSTORE); }
void sv_cmd_geosearch(sv_ctx *c, int argc, sv_str *argv) { georadius_generic(c, argc, argv, 1, G_SEARCH); }
void sv_cmd_geosearchstore(sv_ctx *c, int argc, sv_str *argv) { georadius_generic(c, argc, argv, 2, G_SEARCH | G_SEARCHSTORE); }
