/* stream_int: what stream.c (the data structure) offers t_stream.c (the commands)
 * and the unit test; not for other modules. */
#ifndef SV_STREAM_INT_H
#define SV_STREAM_INT_H

#include "stream.h"

#define ENT_DELETED 1

sv_sid ent_id(const char *e);
uint32_t ent_nfields(const char *e);
sv_str ent_next_str(const char **p); /* fields start at e + 21 */
#define ENT_FIELDS(e) ((e) + 21)

int sid_incr(sv_sid *id); /* -1 when it wrapped (the max ID) */
int sid_decr(sv_sid *id); /* -1 when it wrapped (0-0) */

sv_sblock *blk(const sv_stream *s, size_t i);
/* Appends an entry (the ID must be greater than last_id); -1: too large. */
int stream_append(sv_stream *s, sv_sid id, int nf, const sv_str *fv);

typedef struct siter {
    const sv_stream *s;
    size_t b;
    uint32_t e;
    sv_sid start, end;
    int rev, done;
} siter;
/* Live entries with start <= ID <= end (NULL: no bound), ascending or (rev) descending. */
void siter_start(siter *it, const sv_stream *s, const sv_sid *start, const sv_sid *end, int rev);
const char *siter_next(siter *it);

const char *stream_find(const sv_stream *s, const sv_sid *id, size_t *bi, uint32_t *ei);
sv_sid stream_edge(const sv_stream *s, int first, int tombs);
int stream_delete(sv_stream *s, const sv_sid *id);
int stream_tombstone(sv_stream *s, const sv_sid *id);
void stream_fix_first(sv_stream *s);

enum { TRIM_NONE, TRIM_MAXLEN, TRIM_MINID };
typedef struct trim_args {
    int strategy, approx;
    long long maxlen, limit;
    sv_sid minid;
} trim_args;
int64_t stream_trim(sv_stream *s, const trim_args *t);

size_t pel_lower(const sv_pel *p, const sv_sid *id);
sv_nack *pel_find(const sv_pel *p, const sv_sid *id, size_t *at);
void pel_insert(sv_pel *p, sv_nack *n);
void pel_remove_at(sv_pel *p, size_t i);
void pel_remove(sv_pel *p, const sv_sid *id);
#define PEL_AT(p, i) ((p)->a[(p)->head + (i)])

sv_cgroup *group_find(const sv_stream *s, sv_str name, size_t *at);
sv_cgroup *group_create(sv_stream *s, sv_str name, sv_sid last, int64_t entries_read);
void group_destroy(sv_stream *s, size_t at);
void cgroup_free(sv_cgroup *g);
sv_consumer *consumer_find(const sv_cgroup *g, sv_str name, size_t *at);
sv_consumer *consumer_create(sv_cgroup *g, sv_str name, int64_t now);
void consumer_delete(sv_cgroup *g, size_t at);

#endif
