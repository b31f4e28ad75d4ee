/* url: parses the address forms of sl_client_options.url, once, for every binding:
 * "redis://[user[:password]@]host[:port][/db]", "host:port", "host" (port 6379),
 * "[::1]:port", and comma-separated lists of those. Percent-escapes in user and
 * password are decoded. "rediss://" is the same with TLS (the client decides whether this
 * build has it); every element of a list has the same scheme. */
#ifndef SL_URL_H
#define SL_URL_H

#include <stddef.h>

#define SL__MAX_SEEDS 16
#define SL__HOST_MAX 256

typedef struct sl__endpoint {
    char host[SL__HOST_MAX];   /* without brackets for IPv6 */
    int port;
} sl__endpoint;

typedef struct sl__url {
    sl__endpoint seeds[SL__MAX_SEEDS];
    int nseeds;
    char username[256];        /* "" when absent */
    char password[256];        /* "" when absent */
    int has_password;
    int db;                    /* -1 when absent */
    int tls;                   /* rediss:// */
} sl__url;

/* Parses s into *out. Returns 0 or SL_EINVAL (errmsg says what is wrong, at most 127
 * bytes + NUL). */
int sl__url_parse(const char *s, sl__url *out, char *errmsg);

#endif
