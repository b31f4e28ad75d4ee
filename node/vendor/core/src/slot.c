/* slot: see slot.h. The table is CRC16 with polynomial 0x1021 and initial value 0
 * (XMODEM), the one in Redis's cluster specification. */
#include "slot.h"


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
    /* A plain loop: keys are short, and a libc memchr call costs more than it saves. */
    size_t open = 0;
    while (open < len && k[open] != '{') open++;
    if (open < len) {
        size_t close = open + 1;
        while (close < len && k[close] != '}') close++;
        /* "{}" hashes the whole key, as in Redis. */
        if (close < len && close != open + 1)
            return sl__crc16(k + open + 1, close - open - 1) & (SL_SLOTS - 1);
    }
    return sl__crc16(k, len) & (SL_SLOTS - 1);
}
