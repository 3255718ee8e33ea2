#ifndef TUNNELPROBE_CPREFETCH_SHIM_H
#define TUNNELPROBE_CPREFETCH_SHIM_H
// A cache prefetch hint (no Swift spelling exists): trace's transaction matcher asks for the index
// slots of a batch's lookups before it matches them. Unlike a load, a prefetch never stalls the
// instructions after it while the line is on its way.
static inline void tunnelprobe_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
