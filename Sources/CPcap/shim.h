#ifndef TUNNELPROBE_CPCAP_SHIM_H
#define TUNNELPROBE_CPCAP_SHIM_H
// libpcap (Debian libpcap-dev) as a system library target. Macros Swift cannot import are
// re-exported as constants here.
#include <pcap/pcap.h>

static const int CPcap_PCAP_ERROR = PCAP_ERROR;
static const int CPcap_ERRBUF_SIZE = PCAP_ERRBUF_SIZE;
static const unsigned int CPcap_TSTAMP_PRECISION_MICRO = PCAP_TSTAMP_PRECISION_MICRO;
static const unsigned int CPcap_TSTAMP_PRECISION_NANO = PCAP_TSTAMP_PRECISION_NANO;
static const unsigned int CPcap_NETMASK_UNKNOWN = PCAP_NETMASK_UNKNOWN;

#endif
