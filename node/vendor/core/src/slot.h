/* slot: CRC16-XMODEM, {hash tag} extraction and key -> slot, exactly as Redis Cluster.
 * A leaf module shared with slotlane-server: no allocation, no state. */
#ifndef SL_SLOT_H
#define SL_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define SL_SLOTS 16384

/* CRC16-XMODEM of len bytes (the variant Redis Cluster uses). */
uint16_t sl__crc16(const void *buf, size_t len);

/* The slot of a key: if the key holds '{' followed later by '}' with at least one byte
 * between them, only the bytes between the first '{' and the first '}' after it are hashed. */
unsigned sl__key_slot(const void *key, size_t len);

#endif
