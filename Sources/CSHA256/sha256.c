#include "CSHA256.h"
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define TP_SHA_X86 1
#endif

// FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the cube roots of the
// first 64 primes.
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static inline uint32_t load_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void store_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

// FIPS 180-4 section 6.2.2, one block at a time.
void tp_sha256_compress_portable(uint32_t state[8], const uint8_t *blocks, size_t count) {
    for (; count > 0; count--, blocks += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; t++) w[t] = load_be32(blocks + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int t = 0; t < 64; t++) {
            uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
            uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
        }
        state[0] += a; state[1] += b; state[2] += c; state[3] += d;
        state[4] += e; state[5] += f; state[6] += g; state[7] += h;
    }
}

#ifdef TP_SHA_X86
// The same function with the SHA extensions: SHA256RNDS2 does two rounds on the state held as
// ABEF and CDGH, SHA256MSG1/MSG2 extend the message schedule four words at a time.
__attribute__((target("sha,ssse3,sse4.1")))
void tp_sha256_compress_extensions(uint32_t state[8], const uint8_t *blocks, size_t count) {
    const __m128i byteswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[0]), 0xB1);   // CDAB
    __m128i cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[4]), 0x1B);  // EFGH
    __m128i abef = _mm_alignr_epi8(tmp, cdgh, 8);
    cdgh = _mm_blend_epi16(cdgh, tmp, 0xF0);
    for (; count > 0; count--, blocks += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i m[4];
        for (int i = 0; i < 4; i++) m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 16 * i)), byteswap);
        for (int g = 0; g < 16; g++) {
            if (g >= 4) {
                // W[4g..4g+3] from the four groups before: m[g-4], m[g-3], m[g-2], m[g-1].
                __m128i x = _mm_sha256msg1_epu32(m[g & 3], m[(g + 1) & 3]);
                x = _mm_add_epi32(x, _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4));
                m[g & 3] = _mm_sha256msg2_epu32(x, m[(g + 3) & 3]);
            }
            __m128i wk = _mm_add_epi32(m[g & 3], _mm_loadu_si128((const __m128i *)&K[4 * g]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    tmp = _mm_shuffle_epi32(abef, 0x1B);                                // FEBA
    cdgh = _mm_shuffle_epi32(cdgh, 0xB1);                               // DCHG
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(tmp, cdgh, 0xF0));   // DCBA
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(cdgh, tmp, 8));      // HGFE
}

int tp_sha256_has_extensions(void) {
    static int known = -1;
    int value = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (value >= 0) return value;
    unsigned a, b, c, d;
    int ssse3 = 0, sse41 = 0, sha = 0;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        ssse3 = (c >> 9) & 1;
        sse41 = (c >> 19) & 1;
    }
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        sha = (b >> 29) & 1;
    }
    value = ssse3 && sse41 && sha;
    __atomic_store_n(&known, value, __ATOMIC_RELAXED);
    return value;
}
#else
void tp_sha256_compress_extensions(uint32_t state[8], const uint8_t *blocks, size_t count) {
    tp_sha256_compress_portable(state, blocks, count);
}

int tp_sha256_has_extensions(void) { return 0; }
#endif

static inline void compress(uint32_t state[8], const uint8_t *blocks, size_t count) {
    if (tp_sha256_has_extensions()) {
        tp_sha256_compress_extensions(state, blocks, count);
    } else {
        tp_sha256_compress_portable(state, blocks, count);
    }
}

void tp_sha256_init(tp_sha256 *context) {
    static const uint32_t initial[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    };
    memcpy(context->state, initial, sizeof initial);
    context->length = 0;
    context->used = 0;
}

void tp_sha256_update(tp_sha256 *context, const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    context->length += count;
    if (context->used > 0) {
        size_t take = 64 - context->used < count ? 64 - context->used : count;
        memcpy(context->buffer + context->used, p, take);
        context->used += (uint32_t)take;
        p += take;
        count -= take;
        if (context->used < 64) return;
        compress(context->state, context->buffer, 1);
        context->used = 0;
    }
    if (count >= 64) {
        compress(context->state, p, count / 64);
        p += count - count % 64;
        count %= 64;
    }
    memcpy(context->buffer, p, count);
    context->used = (uint32_t)count;
}

// FIPS 180-4 section 5.1.1: a 1 bit, zeros, and the length in bits as 64 bits big-endian.
void tp_sha256_final(const tp_sha256 *context, uint8_t digest[32]) {
    uint32_t state[8];
    uint8_t tail[128];
    memcpy(state, context->state, sizeof state);
    size_t used = context->used;
    memcpy(tail, context->buffer, used);
    tail[used] = 0x80;
    size_t total = used + 9 <= 64 ? 64 : 128;
    memset(tail + used + 1, 0, total - used - 1);
    uint64_t bits = context->length * 8;
    for (int i = 0; i < 8; i++) tail[total - 1 - i] = (uint8_t)(bits >> (8 * i));
    compress(state, tail, total / 64);
    for (int i = 0; i < 8; i++) store_be32(digest + 4 * i, state[i]);
}
