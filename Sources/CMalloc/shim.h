#ifndef TUNNELPROBE_CMALLOC_SHIM_H
#define TUNNELPROBE_CMALLOC_SHIM_H
// glibc's allocator statistics (mallinfo2; malloc(3)), which Swift's Glibc module does not import:
// monitor reports the heap in use beside the resident size.
#include <malloc.h>

#endif
