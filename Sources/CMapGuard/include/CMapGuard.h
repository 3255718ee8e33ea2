#ifndef TUNNELPROBE_CMAPGUARD_H
#define TUNNELPROBE_CMAPGUARD_H
#include <stddef.h>
#include <stdint.h>

// Reading a memory-mapped file that shrinks (truncated by another process) or whose disk fails raises
// SIGBUS at the first byte past its new end, and SIGBUS ends the process. The capture readers map
// files; this guard turns that signal into data: a mapping registered here whose page faults that
// way gets a page of zeros in its place, the faulting read goes on, and the mapping's fault count
// says that what was read is no longer the file (the reader then stops with an error). A SIGBUS
// outside every registered mapping goes to the disposition that was there before.
//
// The registry is fixed (TUNNELPROBE_MAP_GUARD_SLOTS mappings at once) and lock-free: the handler
// only reads it and increments a counter, which is all a signal handler may do.

#define TUNNELPROBE_MAP_GUARD_SLOTS 64

/// Installs the SIGBUS handler (once per process; later calls do nothing). 0, or -1 with errno.
int tunnelprobe_map_guard_install(void);

/// Registers [start, start + length): a slot number, or -1 when every slot is taken (or the guard
/// could not be installed): the caller must not read the mapping unguarded (OSLayer unmaps it).
int tunnelprobe_map_guard_register(const void *start, size_t length);

/// Forgets the mapping of `slot` (before it is unmapped).
void tunnelprobe_map_guard_unregister(int slot);

/// Pages of `slot`'s mapping that faulted and were replaced by zeros since it was registered.
uint64_t tunnelprobe_map_guard_faults(int slot);

#endif
