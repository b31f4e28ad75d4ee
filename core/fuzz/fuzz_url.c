/* fuzz_url: the address parser (url.c) that every binding's URL and seed list goes
 * through. Input: the bytes as a C string (cut at the first NUL, as a binding's string is).
 * Checked: the result is 0, SL_EINVAL or SL_EUNSUPPORTED; an error has a message of at most
 * 127 bytes; a success has 1..SL__MAX_SEEDS seeds, each with a non-empty NUL-terminated host
 * and a port in 1..65535, NUL-terminated credentials, and db -1 or at least 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slotlane.h"
#include "url.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_url: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy plus the NUL: a read past the string is a crash */
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    sl__url u;
    char errmsg[128 + 16];
    memset(errmsg, 'x', sizeof errmsg);
    int rc = sl__url_parse(s, &u, errmsg);
    CHECK(rc == 0 || rc == SL_EINVAL || rc == SL_EUNSUPPORTED);
    if (rc == SL_EINVAL || rc == SL_EUNSUPPORTED) {
        size_t n = strnlen(errmsg, sizeof errmsg);
        CHECK(n > 0 && n <= 127);
    } else {
        CHECK(u.nseeds >= 1 && u.nseeds <= SL__MAX_SEEDS);
        for (int i = 0; i < u.nseeds; i++) {
            size_t hl = strnlen(u.seeds[i].host, sizeof u.seeds[i].host);
            CHECK(hl > 0 && hl < sizeof u.seeds[i].host);
            CHECK(u.seeds[i].port >= 1 && u.seeds[i].port <= 65535);
        }
        CHECK(strnlen(u.username, sizeof u.username) < sizeof u.username);
        CHECK(strnlen(u.password, sizeof u.password) < sizeof u.password);
        CHECK(u.has_password || u.password[0] == '\0');
        CHECK(u.db >= -1);
    }
    free(s);
    return 0;
}
