#ifndef TUNNELPROBE_CINETADDRESS_SHIM_H
#define TUNNELPROBE_CINETADDRESS_SHIM_H
// inet_pton(3) alone, for Base's address parser: what is accepted is exactly what the kernel takes,
// without Base importing the whole C library (only the OS layer imports Glibc).
#include <arpa/inet.h>
#include <stdint.h>

/// 1 and the 4 bytes of an IPv4 dotted quad in network order, or 0.
static inline int tunnelprobe_parse_ipv4(const char *text, uint8_t bytes[4]) {
    return inet_pton(AF_INET, text, bytes);
}

/// 1 and the 16 bytes of an IPv6 address in network order, or 0.
static inline int tunnelprobe_parse_ipv6(const char *text, uint8_t bytes[16]) {
    return inet_pton(AF_INET6, text, bytes);
}

#endif
