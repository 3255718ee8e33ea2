#define _GNU_SOURCE
#include "CMapGuard.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct guarded_mapping {
    // 0 when the slot is free, CLAIMED while it is being filled in.
    _Atomic uintptr_t start;
    _Atomic uintptr_t end;
    _Atomic uint64_t faults;
};

static struct guarded_mapping slots[TUNNELPROBE_MAP_GUARD_SLOTS];
// `start` of a slot being filled in.
#define CLAIMED ((uintptr_t)1)
static struct sigaction previous;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_error;
static uintptr_t page_size;

static void forward(int number, siginfo_t *info, void *context) {
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(number, info, context);
        return;
    }
    if (previous.sa_handler == SIG_IGN) return;
    if (previous.sa_handler == SIG_DFL) {
        // Back to the default, and the signal again (delivered when this returns): it ends the process
        // as it would have without the guard, whether a fault raised it or a process sent it.
        signal(SIGBUS, SIG_DFL);
        raise(SIGBUS);
        return;
    }
    previous.sa_handler(number);
}

static void on_bus_error(int number, siginfo_t *info, void *context) {
    int saved = errno;
    uintptr_t address = (uintptr_t)info->si_addr;
    // Only a fault (si_code > 0, raised by the kernel for an access) has an address to look at; a
    // SIGBUS sent by a process is passed on.
    for (int i = 0; info->si_code > 0 && i < TUNNELPROBE_MAP_GUARD_SLOTS; i++) {
        uintptr_t start = atomic_load_explicit(&slots[i].start, memory_order_acquire);
        if (start <= CLAIMED || address < start) continue;
        if (address >= atomic_load_explicit(&slots[i].end, memory_order_acquire)) continue;
        // A private anonymous page (zeros) over the page that has no file behind it any more.
        void *page = (void *)(address & ~(page_size - 1));
        if (mmap(page, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) break;
        atomic_fetch_add_explicit(&slots[i].faults, 1, memory_order_release);
        errno = saved;
        return;
    }
    errno = saved;
    forward(number, info, context);
}

static void install(void) {
    page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_bus_error;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, &previous) != 0) install_error = errno ? errno : EINVAL;
}

int tunnelprobe_map_guard_install(void) {
    pthread_once(&once, install);
    if (install_error) {
        errno = install_error;
        return -1;
    }
    return 0;
}

int tunnelprobe_map_guard_register(const void *start, size_t length) {
    if (start == NULL || length == 0 || tunnelprobe_map_guard_install() != 0) return -1;
    for (int i = 0; i < TUNNELPROBE_MAP_GUARD_SLOTS; i++) {
        // Claimed with CLAIMED (the handler skips it) while `end` and the count are set; then `start`.
        uintptr_t free_slot = 0;
        if (!atomic_compare_exchange_strong_explicit(&slots[i].start, &free_slot, CLAIMED,
                                                     memory_order_acq_rel, memory_order_relaxed)) {
            continue;
        }
        atomic_store_explicit(&slots[i].end, (uintptr_t)start + length, memory_order_relaxed);
        atomic_store_explicit(&slots[i].faults, 0, memory_order_relaxed);
        atomic_store_explicit(&slots[i].start, (uintptr_t)start, memory_order_release);
        return i;
    }
    return -1;
}

void tunnelprobe_map_guard_unregister(int slot) {
    if (slot < 0 || slot >= TUNNELPROBE_MAP_GUARD_SLOTS) return;
    atomic_store_explicit(&slots[slot].start, 0, memory_order_release);
}

uint64_t tunnelprobe_map_guard_faults(int slot) {
    if (slot < 0 || slot >= TUNNELPROBE_MAP_GUARD_SLOTS) return 0;
    return atomic_load_explicit(&slots[slot].faults, memory_order_acquire);
}
