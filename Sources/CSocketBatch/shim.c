#define _GNU_SOURCE
#include <stddef.h>
#include <sys/socket.h>
#include "CSocketBatch.h"

_Static_assert(sizeof(struct tp_mmsghdr) == sizeof(struct mmsghdr), "tp_mmsghdr is not mmsghdr");
_Static_assert(offsetof(struct tp_mmsghdr, msg_len) == offsetof(struct mmsghdr, msg_len), "tp_mmsghdr is not mmsghdr");

int tp_sendmmsg(int fd, struct tp_mmsghdr *messages, unsigned int count, int flags) {
    return sendmmsg(fd, (struct mmsghdr *)messages, count, flags);
}

int tp_recvmmsg(int fd, struct tp_mmsghdr *messages, unsigned int count, int flags) {
    return recvmmsg(fd, (struct mmsghdr *)messages, count, flags, NULL);
}

// glibc's netpacket/packet.h may predate this option (Linux 3.14, include/uapi/linux/if_packet.h).
#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif
const int tp_sol_packet = SOL_PACKET;
const int tp_packet_qdisc_bypass = PACKET_QDISC_BYPASS;
const unsigned short tp_eth_p_ip = ETH_P_IP;
