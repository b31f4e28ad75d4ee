/* fuzz_scan: what sl_batch_append does with a caller's RESP bytes: the request scanner
 * (resp.c, sl__resp_scan_request) cuts them into commands and argument views, then the
 * router looks each command up (commands.c, sl__cmd_lookup, subcommands included) and
 * finds its keys from the key specs (sl__cmd_keys: index, keyword, range and keynum specs,
 * the movable-key procedures) and their slots (slot.c).
 *
 * Checked, per command until the bytes end or are refused: the framing-only scan (a plain
 * client) agrees with the scan with views (the same result and length); a refusal has a
 * reason; argc views, each inside the command's bytes, in order; the keys are argument
 * indexes 1..argc-1 in argument order, the same ones with a small and with a large
 * output array; each slot is below 16384 and a key's hash tag decides it; re-encoding the
 * arguments with the encoder and scanning that gives the same arguments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "resp.h"
#include "slot.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_scan: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const sl__alloc *a = &sl__default_alloc;
    sl__arg *args = NULL;
    size_t args_len = 0, args_cap = 0;
    uint32_t *keys = NULL;
    sl__bytes enc = {0};
    const char **argv = NULL;
    size_t *argvlen = NULL;
    size_t pos = 0;
    while (pos < size) {
        size_t used = 0, used2 = 0;
        uint32_t argc = 0, argc2 = 0;
        char why[128] = "", why2[128] = "";
        args_len = 0;
        int rc = sl__resp_scan_request(a, data + pos, size - pos, &used, &args, &args_len, &args_cap, &argc, why);
        int rc2 = sl__resp_scan_request(a, data + pos, size - pos, &used2, NULL, NULL, NULL, &argc2, why2);
        CHECK(rc == 1 || rc == 0 || rc == SL_EINVAL || rc == SL_ENOMEM);
        CHECK(rc == rc2);
        if (rc == SL_EINVAL) CHECK(why[0] != '\0' && strnlen(why, sizeof why) < sizeof why);
        if (rc != 1) break;
        CHECK(used == used2 && argc == argc2);
        CHECK(used > 0 && used <= size - pos);
        CHECK(argc >= 1 && args_len == argc);
        const uint8_t *cmd = data + pos;
        for (uint32_t i = 0; i < argc; i++) {
            CHECK(args[i].off <= used && args[i].len <= used - args[i].off);
            if (i) CHECK(args[i].off >= args[i - 1].off + args[i - 1].len);
        }
        /* routing: lookup, keys, slots */
        const sl__cmdinfo *info = sl__cmd_lookup(cmd, args, argc);
        uint32_t small[2];
        size_t nk = sl__cmd_keys(info, cmd, args, argc, small, 2);
        if (!info) CHECK(nk == 0);
        if (nk) {
            keys = realloc(keys, nk * sizeof *keys);
            CHECK(keys != NULL);
            CHECK(sl__cmd_keys(info, cmd, args, argc, keys, nk) == nk);
            for (size_t k = 0; k < nk; k++) {
                CHECK(keys[k] >= 1 && keys[k] < argc);
                if (k < 2) CHECK(keys[k] == small[k]);
                if (k) CHECK(keys[k] >= keys[k - 1]);
                unsigned slot = sl__key_slot(cmd + args[keys[k]].off, args[keys[k]].len);
                CHECK(slot < SL_SLOTS);
            }
        }
        /* the encoder's form of these arguments scans to the same arguments (not always the
         * same bytes: the scanner takes lengths with leading zeros, as Redis does) */
        argv = realloc(argv, argc * sizeof *argv);
        argvlen = realloc(argvlen, argc * sizeof *argvlen);
        CHECK(argv && argvlen);
        for (uint32_t i = 0; i < argc; i++) {
            argv[i] = (const char *)cmd + args[i].off;
            argvlen[i] = args[i].len;
        }
        enc.len = 0;
        CHECK(sl__resp_encode_argv(a, &enc, (int)argc, argv, argvlen) == 0);
        CHECK(enc.len <= used);
        sl__arg *eargs = NULL;
        size_t elen = 0, ecap = 0, eused = 0;
        uint32_t eargc = 0;
        CHECK(sl__resp_scan_request(a, enc.ptr, enc.len, &eused, &eargs, &elen, &ecap, &eargc, NULL) == 1);
        CHECK(eused == enc.len && eargc == argc);
        for (uint32_t i = 0; i < argc; i++)
            CHECK(eargs[i].len == args[i].len &&
                  memcmp(enc.ptr + eargs[i].off, cmd + args[i].off, args[i].len) == 0);
        free(eargs);
        pos += used;
    }
    free(args);
    free(keys);
    free(argv);
    free(argvlen);
    sl__bytes_free(a, &enc);
    return 0;
}
