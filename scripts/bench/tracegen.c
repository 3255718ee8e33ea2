// Writes a synthetic client-side DNS capture for the trace benchmark: N queries from one client to four
// resolvers over Ethernet, each answered after 1-40 ms except ~1% lost; ~0.5% answers duplicated.
// Names look like tunnel traffic (a 48-character base32 label under t.example.com). Seeded (SplitMix64).
// Usage: tracegen OUT.pcap QUERIES SEED
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state;
static uint64_t next(void) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

typedef struct { int64_t time; uint32_t query; uint8_t kind; } event;  // kind 0 query, 1 response

static int by_time(const void *a, const void *b) {
    const event *x = a, *y = b;
    return x->time < y->time ? -1 : x->time > y->time ? 1 : (int)x->kind - (int)y->kind;
}

static size_t frame(uint8_t *f, uint32_t q, int response) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
    uint32_t resolver = 0xc6120001 + (q % 4), client = 0xc6120102;
    uint16_t cport = 40000 + (q % 64), id = (uint16_t)(q * 2654435761u >> 16);
    uint8_t dns[300];
    size_t n = 0;
    dns[n++] = id >> 8; dns[n++] = id & 0xff;
    dns[n++] = response ? 0x81 : 0x01; dns[n++] = response ? 0x80 : 0x00;
    dns[n++] = 0; dns[n++] = 1; dns[n++] = 0; dns[n++] = response ? 1 : 0; dns[n++] = 0; dns[n++] = 0; dns[n++] = 0; dns[n++] = 0;
    dns[n++] = 48;
    uint64_t h = q * 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 48; i++) { dns[n++] = alphabet[h & 31]; h = h * 6364136223846793005ULL + 1442695040888963407ULL; h ^= h >> 17; }
    const char *zone = "\001t\007example\003com";
    memcpy(dns + n, zone, 15); n += 15;
    dns[n++] = 0; dns[n++] = 16; dns[n++] = 0; dns[n++] = 1;  // TXT IN
    if (response) {  // one TXT answer of 100 bytes, name compressed to the question
        uint8_t rr[] = {0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 0, 0, 101, 100};
        memcpy(dns + n, rr, sizeof rr); n += sizeof rr;
        memset(dns + n, 'x', 100); n += 100;
    }
    uint32_t src = response ? resolver : client, dst = response ? client : resolver;
    uint16_t sport = response ? 53 : cport, dport = response ? cport : 53;
    size_t ip = 20 + 8 + n;
    uint8_t eth[14] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00};
    memcpy(f, eth, 14);
    uint8_t *p = f + 14;
    p[0] = 0x45; p[1] = 0; p[2] = ip >> 8; p[3] = ip & 0xff; p[4] = 0; p[5] = 1; p[6] = 0x40; p[7] = 0; p[8] = 64; p[9] = 17; p[10] = 0; p[11] = 0;
    for (int i = 0; i < 4; i++) { p[12 + i] = src >> (24 - 8 * i); p[16 + i] = dst >> (24 - 8 * i); }
    uint8_t *u = p + 20;
    u[0] = sport >> 8; u[1] = sport & 0xff; u[2] = dport >> 8; u[3] = dport & 0xff; u[4] = (8 + n) >> 8; u[5] = (8 + n) & 0xff; u[6] = 0; u[7] = 0;
    memcpy(u + 8, dns, n);
    return 14 + ip;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: tracegen OUT.pcap QUERIES SEED\n"); return 2; }
    uint32_t queries = (uint32_t)strtoul(argv[2], NULL, 10);
    state = strtoull(argv[3], NULL, 10);
    event *events = malloc(sizeof(event) * (size_t)queries * 3);
    size_t count = 0;
    int64_t t = 1795219200LL * 1000000000LL;
    for (uint32_t q = 0; q < queries; q++) {
        t += 25000 + next() % 50000;  // about 20,000 queries per second
        events[count++] = (event){t, q, 0};
        uint64_t r = next() % 1000;
        if (r < 10) continue;  // lost
        int64_t delay = 1000000 + (int64_t)(next() % 39000000);
        events[count++] = (event){t + delay, q, 1};
        if (r < 15) events[count++] = (event){t + delay + 200000, q, 1};  // duplicate
    }
    qsort(events, count, sizeof(event), by_time);
    pcap_t *dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
    pcap_dumper_t *out = pcap_dump_open(dead, argv[1]);
    if (!out) { fprintf(stderr, "%s\n", pcap_geterr(dead)); return 1; }
    uint8_t f[600];
    for (size_t i = 0; i < count; i++) {
        struct pcap_pkthdr h;
        size_t len = frame(f, events[i].query, events[i].kind);
        h.ts.tv_sec = events[i].time / 1000000000LL;
        h.ts.tv_usec = events[i].time % 1000000000LL;
        h.caplen = h.len = (uint32_t)len;
        pcap_dump((u_char *)out, &h, f);
    }
    pcap_dump_close(out);
    pcap_close(dead);
    printf("%zu packets\n", count);
    free(events);
    return 0;
}
