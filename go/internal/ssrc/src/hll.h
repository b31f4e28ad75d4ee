/* hll: HyperLogLog on string values, in Redis's exact layout — a 16-byte header
 * ("HYLL", encoding 0 dense / 1 sparse, 3 unused bytes, the cached cardinality as
 * 8 little-endian bytes whose top bit marks it stale), then 16384 6-bit registers:
 * dense (12288 bytes, packed from the least significant bit) or sparse (ZERO,
 * XZERO and VAL opcodes). Elements hash with Redis's MurmurHash64A and seed, the
 * sparse form is updated by the same in-place rules (split, then merge of
 * neighbouring VAL runs, promotion above 3000 bytes or a register above 32) and
 * the count is Ertl's estimator as in Redis 7.0: a key built here is byte for byte
 * the key Redis builds from the same commands, and either server reads the
 * other's. Pure functions over byte buffers, so they are unit tested alone. */
#ifndef SV_HLL_H
#define SV_HLL_H

#include <stddef.h>
#include <stdint.h>

#define SV_HLL_P 14
#define SV_HLL_Q (64 - SV_HLL_P)
#define SV_HLL_REGISTERS (1 << SV_HLL_P)
#define SV_HLL_BITS 6
#define SV_HLL_HDR 16
#define SV_HLL_DENSE_SIZE (SV_HLL_HDR + (SV_HLL_REGISTERS * SV_HLL_BITS + 7) / 8)
#define SV_HLL_SPARSE_MAX_BYTES 3000 /* Redis's hll-sparse-max-bytes default */
enum { SV_HLL_DENSE = 0, SV_HLL_SPARSE = 1 };

uint64_t sv_murmur64a(const void *key, size_t len, uint64_t seed);
/* Register index and run length (1..Q+1) of an element. */
int sv_hll_patlen(const void *ele, size_t len, long *index);
/* A new empty HLL (sparse, 18 bytes) into buf (room for 18). */
size_t sv_hll_init(uint8_t *buf);
/* 1 when the bytes are an HLL Redis accepts (magic, encoding, dense length). */
int sv_hll_valid(const uint8_t *p, size_t len);
unsigned sv_hll_dense_get(const uint8_t *regs, long i);
void sv_hll_dense_set(uint8_t *regs, long i, unsigned v);
/* The dense form of a sparse HLL into out (SV_HLL_DENSE_SIZE bytes); -1 if corrupt. */
int sv_hll_to_dense(const uint8_t *sparse, size_t len, uint8_t *out);
/* Sets register index to count if larger, sparse form in place: *len grows by at
 * most 3 (buf needs that room). Returns 1 changed, 0 not, -1 corrupt, 2 when the
 * sparse form must be promoted (the caller converts and sets the dense register). */
int sv_hll_sparse_set(uint8_t *buf, size_t *len, long index, unsigned count);
/* Max of each register with the HLL's into max[16384]; -1 if corrupt. */
int sv_hll_merge(uint8_t *max, const uint8_t *p, size_t len);
/* Cardinality: of an HLL (invalid set on a corrupt sparse form), or of raw registers. */
uint64_t sv_hll_count(const uint8_t *p, size_t len, int *invalid);
uint64_t sv_hll_count_raw(const uint8_t *regs);

#endif
