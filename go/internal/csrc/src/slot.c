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
    /* One pass: the CRC runs while looking for '{'; only a key with a real tag is hashed
     * again (just its tag). */
    uint16_t crc = 0;
    size_t i = 0;
    for (; i < len && k[i] != '{'; i++) crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ k[i]) & 0xff]);
    if (i < len) {
        size_t close = i + 1;
        while (close < len && k[close] != '}') close++;
        /* "{}" hashes the whole key, as in Redis. */
        if (close < len && close != i + 1) return sl__crc16(k + i + 1, close - i - 1) & (SL_SLOTS - 1);
        for (; i < len; i++) crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ k[i]) & 0xff]);
    }
    return crc & (SL_SLOTS - 1);
}
