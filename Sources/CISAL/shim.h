#ifndef TUNNELPROBE_CISAL_SHIM_H
#define TUNNELPROBE_CISAL_SHIM_H
// Intel ISA-L (Debian libisal-dev) as a system library target: only the erasure-code part
// (Reed-Solomon over GF(2^8)) is used. Version macros are re-exported as constants.
#include <isa-l.h>

static const int CISAL_VERSION_MAJOR = ISAL_MAJOR_VERSION;
static const int CISAL_VERSION_MINOR = ISAL_MINOR_VERSION;
static const int CISAL_VERSION_PATCH = ISAL_PATCH_VERSION;

#endif
