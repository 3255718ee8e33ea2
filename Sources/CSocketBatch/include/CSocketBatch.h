#ifndef TUNNELPROBE_CSOCKETBATCH_H
#define TUNNELPROBE_CSOCKETBATCH_H
// sendmmsg(2) and recvmmsg(2), which glibc declares only under _GNU_SOURCE and Swift's Glibc module
// does not import: the sweep sends and reads its datagrams in batches, one system call each.
#include <sys/socket.h>
// AF_PACKET (packet(7)): the sweep's packet-socket send path, which Swift's Glibc module does not cover.
#include <netpacket/packet.h>
#include <net/ethernet.h>

// Laid out as glibc's struct mmsghdr (checked in shim.c).
struct tp_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};

// packet(7) constants that are macros Swift cannot import.
extern const int tp_sol_packet;
extern const int tp_packet_qdisc_bypass;
extern const unsigned short tp_eth_p_ip;

int tp_sendmmsg(int fd, struct tp_mmsghdr *messages, unsigned int count, int flags);
int tp_recvmmsg(int fd, struct tp_mmsghdr *messages, unsigned int count, int flags);

#endif
