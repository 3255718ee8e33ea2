#ifndef TUNNELPROBE_CSHA256_H
#define TUNNELPROBE_CSHA256_H
// SHA-256 (FIPS 180-4) as a plain C value: a context is copied by assignment, with no allocation,
// so a key's pre-absorbed HMAC pads (RFC 2104) are reused per message by copying 112 bytes.
// swift-crypto's SHA256 keeps its state in a class, so each copy of a keyed state cost a heap
// allocation per probe. The compression uses the x86 SHA extensions when the CPU has them
// (checked once with cpuid) and portable C otherwise; both are checked against swift-crypto.
#include <stddef.h>
#include <stdint.h>

typedef struct tp_sha256 {
    uint32_t state[8];
    uint64_t length;      // bytes absorbed so far
    uint8_t buffer[64];   // the partial block
    uint32_t used;        // bytes in `buffer`
} tp_sha256;

void tp_sha256_init(tp_sha256 *context);
void tp_sha256_update(tp_sha256 *context, const void *bytes, size_t count);
// Writes the 32-byte digest of what `context` absorbed; `context` itself is left as it was.
void tp_sha256_final(const tp_sha256 *context, uint8_t digest[32]);

// The compression function alone (`blocks` 64-byte blocks into `state`), for the tests that hold
// the two implementations against each other. `tp_sha256_has_extensions` says whether the CPU has
// the SHA extensions (`tp_sha256_compress_extensions` must not be called otherwise).
void tp_sha256_compress_portable(uint32_t state[8], const uint8_t *blocks, size_t count);
void tp_sha256_compress_extensions(uint32_t state[8], const uint8_t *blocks, size_t count);
int tp_sha256_has_extensions(void);

#endif
