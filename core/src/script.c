/* script: Lua scripts by their SHA1 — the digest the server names a script by (SCRIPT LOAD,
 * EVALSHA), and one EVALSHA that survives a node without the script: on NOSCRIPT the script
 * is loaded on the node that answered and the command is sent once more. Every binding's
 * script object is this one loop, so none of them writes it again. */
#include "script.h"

#include "batch.h"
#include "client.h"

#include <string.h>

/* ------------------------------------------------------------------ SHA-1 (FIPS 180-4) */

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) f = (b & c) | (~b & d), k = 0x5a827999u;
        else if (i < 40) f = b ^ c ^ d, k = 0x6ed9eba1u;
        else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdcu;
        else f = b ^ c ^ d, k = 0xca62c1d6u;
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void sl_script_sha1(const void *body, size_t len, char *out)
{
    uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
    const uint8_t *p = body;
    size_t left = len;
    for (; left >= 64; p += 64, left -= 64) sha1_block(h, p);
    /* The padding: 0x80, zeros, the length in bits (big-endian) — one or two blocks. */
    uint8_t tail[128];
    memset(tail, 0, sizeof tail);
    if (left) memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t tl = left < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha1_block(h, tail);
    if (tl == 128) sha1_block(h, tail + 64);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 20; i++) {
        uint8_t byte = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
        out[2 * i] = hex[byte >> 4];
        out[2 * i + 1] = hex[byte & 15];
    }
    out[40] = '\0';
}

/* ------------------------------------------------------------------ EVALSHA with reload */

int sl__script_noscript(const sl_batch *b)
{
    if (!b->result || b->nresult == 0) return 0;
    const sl_reply *r = &b->result[0];
    return r->type == SL_REPLY_ERROR && r->flags == SL_ERR_SERVER && r->len >= 8 &&
           memcmp(b->data.ptr + r->offset, "NOSCRIPT", 8) == 0;
}

int sl__script_put_load(sl_batch *b, const void *body, size_t body_len)
{
    /* The node that answered NOSCRIPT (after any redirect) loads the script. */
    sl_client *c = b->client;
    uint16_t node = b->cmds[0].node;
    if (node >= c->topo.nnodes) return 1;
    char addr[sizeof c->topo.nodes[0]->addr];
    memcpy(addr, c->topo.nodes[node]->addr, sizeof addr);
    sl_route route = SL_ROUTE_INIT;
    route.kind = SL_ROUTE_NODE;
    route.node = addr;
    const char *argv[3] = {"SCRIPT", "LOAD", body ? (const char *)body : ""};
    size_t argvlen[3] = {6, 4, body_len};
    sl_batch_reset(b);
    return sl_batch_append_argv(b, &route, 3, argv, argvlen);
}

int sl_batch_run_script(sl_batch *b, const void *body, size_t body_len, const void *cmd, size_t len,
                        int timeout_ms, void *records, size_t records_cap, void *data, size_t data_cap,
                        sl_sizes *sizes)
{
    if (sizes) memset(sizes, 0, sizeof *sizes);
    if (!b) return SL_EINVAL;
    if (!body && body_len) {
        sl__set_err(b->client, "sl_batch_run_script: no script body");
        return SL_EINVAL;
    }
    sl_sizes s;
    int rc = sl_batch_run(b, cmd, len, 1, timeout_ms, NULL, 0, NULL, 0, &s);
    if (rc == SL_EINVAL || rc == SL_ENOMEM || !sl__script_noscript(b)) goto out;
    /* Then the command goes once more (routed as before: a MOVED meanwhile is followed). */
    int put = sl__script_put_load(b, body, body_len);
    if (put) {
        if (put < 0) rc = put;
        goto out;
    }
    rc = sl_batch_exec(b, timeout_ms, &s);
    if (rc == 0 && s.errors == 0) rc = sl_batch_run(b, cmd, len, 1, timeout_ms, NULL, 0, NULL, 0, &s);
    /* else: the failed SCRIPT LOAD's record is the answer (it says why) */
out:
    if (sizes) *sizes = b->sizes;
    if (rc == SL_ENOMEM || rc == SL_EINVAL) return rc;
    if (records || data || records_cap || data_cap) {
        sl_sizes tmp;
        int crc = sl_batch_copy_out(b, records, records_cap, data, data_cap, sizes ? sizes : &tmp);
        if (crc) return crc;
    }
    return rc;
}
