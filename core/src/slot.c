/* slot: see slot.h. The table is CRC16 with polynomial 0x1021 and initial value 0
 * (XMODEM), the one in Redis's cluster specification. */
#include "slot.h"

#include <string.h>

static const uint16_t crc16_table[256] = {
#include "crc16_table.inc"
};

uint16_t sl__crc16(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ p[i]) & 0xff]);
    return crc;
}

unsigned sl__key_slot(const void *key, size_t len)
{
    const unsigned char *k = key;
    const unsigned char *open = len ? memchr(k, '{', len) : NULL;
    if (open) {
        size_t start = (size_t)(open - k) + 1;
        const unsigned char *close = start < len ? memchr(k + start, '}', len - start) : NULL;
        /* "{}" hashes the whole key, as in Redis. */
        if (close && close != k + start)
            return sl__crc16(k + start, (size_t)(close - (k + start))) & (SL_SLOTS - 1);
    }
    return sl__crc16(k, len) & (SL_SLOTS - 1);
}
