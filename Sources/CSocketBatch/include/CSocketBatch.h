#ifndef TUNNELPROBE_CSOCKETBATCH_H
#define TUNNELPROBE_CSOCKETBATCH_H
// sendmmsg(2) and recvmmsg(2), which glibc declares only under _GNU_SOURCE and Swift's Glibc module
// does not import: the sweep sends and reads its datagrams in batches, one system call each.
#include <sys/socket.h>

// Laid out as glibc's struct mmsghdr (checked in shim.c).
struct tp_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};

int tp_sendmmsg(int fd, struct tp_mmsghdr *messages, unsigned int count, int flags);
int tp_recvmmsg(int fd, struct tp_mmsghdr *messages, unsigned int count, int flags);

#endif
