// The anchor of the trace benchmark: a bare libpcap read loop (pcap_next_ex) over a capture, with
// nanosecond timestamps as trace asks for them. Prints packets and packets per second.
#include <pcap/pcap.h>
#include <stdio.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: pcaploop FILE\n"); return 2; }
    char err[PCAP_ERRBUF_SIZE];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pcap_t *p = pcap_open_offline_with_tstamp_precision(argv[1], PCAP_TSTAMP_PRECISION_NANO, err);
    if (!p) { fprintf(stderr, "%s\n", err); return 1; }
    struct pcap_pkthdr *h;
    const u_char *d;
    unsigned long n = 0, bytes = 0;
    while (pcap_next_ex(p, &h, &d) == 1) { n++; bytes += h->caplen + d[0]; }
    pcap_close(p);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    printf("%lu %.6f %.0f %lu\n", n, s, n / s, bytes);
    return 0;
}
