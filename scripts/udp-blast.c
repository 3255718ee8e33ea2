// A minimal UDP load tool for scripts/bench-impair.sh (not part of the product).
//   udp-blast echo PORT                      answer every datagram on 127.0.0.1:PORT with itself, QR set
//   udp-blast send PORT SECONDS RATE         send DNS queries to 127.0.0.1:PORT at RATE per second
//                                            (open loop, batches of 32 with sendmmsg) and count answers
// Prints "sent N received M seconds S" for send. Batching keeps its own cost far below the relay's.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int udp(int port, int bind_it) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int size = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(bind_it ? port : 0)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("bind"); exit(1); }
    return fd;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "echo") == 0) {
        int fd = udp(atoi(argv[2]), 1);
        static char buf[BATCH][2048];
        struct mmsghdr msgs[BATCH];
        struct iovec iov[BATCH];
        struct sockaddr_in from[BATCH];
        for (;;) {
            for (int i = 0; i < BATCH; i++) {
                iov[i] = (struct iovec){buf[i], sizeof buf[i]};
                msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i], .msg_namelen = sizeof from[i], .msg_iov = &iov[i], .msg_iovlen = 1};
            }
            int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
            if (n <= 0) continue;
            for (int i = 0; i < n; i++) {
                iov[i].iov_len = msgs[i].msg_len;
                if (msgs[i].msg_len > 2) buf[i][2] |= 0x80;  // QR
            }
            sendmmsg(fd, msgs, n, 0);
        }
    }
    if (argc >= 5 && strcmp(argv[1], "send") == 0) {
        int port = atoi(argv[2]);
        double seconds = atof(argv[3]), rate = atof(argv[4]);
        int fd = udp(0, 0);
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
        // id, RD, one question "bench.vpn.lab.test" A IN.
        unsigned char q[BATCH][64];
        static const unsigned char tail[] = "\5bench\3vpn\3lab\4test\0\0\1\0\1";
        size_t qlen = 12 + sizeof tail - 1;
        struct mmsghdr out[BATCH], in[BATCH];
        struct iovec oiov[BATCH], iiov[BATCH];
        static char rbuf[BATCH][2048];
        for (int i = 0; i < BATCH; i++) {
            memset(q[i], 0, 12);
            q[i][2] = 1; q[i][5] = 1;
            memcpy(q[i] + 12, tail, sizeof tail - 1);
            oiov[i] = (struct iovec){q[i], qlen};
            out[i].msg_hdr = (struct msghdr){.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &oiov[i], .msg_iovlen = 1};
            iiov[i] = (struct iovec){rbuf[i], sizeof rbuf[i]};
            in[i].msg_hdr = (struct msghdr){.msg_iov = &iiov[i], .msg_iovlen = 1};
        }
        uint64_t sent = 0, received = 0;
        uint16_t id = 0;
        double start = now(), end = start + seconds, drain = end + 0.5;
        for (;;) {
            double t = now();
            if (t >= drain) break;
            if (t < end && sent < (t - start) * rate) {
                for (int i = 0; i < BATCH; i++) { q[i][0] = id >> 8; q[i][1] = id & 0xff; id++; }
                int n = sendmmsg(fd, out, BATCH, MSG_DONTWAIT);
                if (n > 0) sent += n;
            }
            int n = recvmmsg(fd, in, BATCH, MSG_DONTWAIT, NULL);
            if (n > 0) received += n;
            else if (t >= end || sent >= (t - start) * rate) usleep(50);
        }
        printf("sent %llu received %llu seconds %.3f\n", (unsigned long long)sent, (unsigned long long)received, seconds);
        return 0;
    }
    fprintf(stderr, "usage: udp-blast echo PORT | udp-blast send PORT SECONDS RATE\n");
    return 2;
}
