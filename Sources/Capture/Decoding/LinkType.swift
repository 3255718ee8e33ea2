/// The link-layer header types the decoder understands, by their libpcap DLT value
/// (what `pcap_datalink` returns; the file's LINKTYPE_ value is mapped to it by libpcap).
public enum LinkType: Sendable, Hashable, CustomStringConvertible {
    /// DLT_NULL (0): 4-byte address family in the capturing host's byte order (BSD loopback).
    case null
    /// DLT_EN10MB (1): Ethernet II, with any number of 802.1Q / 802.1ad tags.
    case ethernet
    /// DLT_PPP (9): PPP (RFC 1661), with or without the RFC 1662 address and control bytes.
    case ppp
    /// DLT_PPP_SERIAL (50): PPP in HDLC-like framing (RFC 1662), or Cisco HDLC.
    case pppSerial
    /// DLT_PPP_ETHER (51): a PPPoE header (RFC 2516) first, no Ethernet header.
    case pppoe
    /// DLT_RAW (12 on Linux, 14 on OpenBSD; LINKTYPE_RAW 101 in files): the IP header first.
    case raw
    /// DLT_LOOP (108): like NULL, the family in network byte order (OpenBSD loopback).
    case loop
    /// DLT_LINUX_SLL (113): Linux "cooked" v1 header, 16 bytes (the `any` device).
    case linuxSLL
    /// DLT_LINUX_SLL2 (276): Linux "cooked" v2 header, 20 bytes (`any` with newer tcpdump).
    case linuxSLL2
    /// DLT_IPV4 (228): a bare IPv4 header first.
    case ipv4
    /// DLT_IPV6 (229): a bare IPv6 header first.
    case ipv6
    /// Anything else; its packets are counted as undecoded.
    case other(Int32)

    public init(dlt: Int32) {
        switch dlt {
        case 0: self = .null
        case 1: self = .ethernet
        case 9: self = .ppp
        case 50: self = .pppSerial
        case 51: self = .pppoe
        case 12, 14, 101: self = .raw
        case 108: self = .loop
        case 113: self = .linuxSLL
        case 276: self = .linuxSLL2
        case 228: self = .ipv4
        case 229: self = .ipv6
        default: self = .other(dlt)
        }
    }

    /// The DLT value to hand to libpcap (`pcap_open_dead`) for this link type.
    public var dlt: Int32 {
        switch self {
        case .null: 0
        case .ethernet: 1
        case .ppp: 9
        case .pppSerial: 50
        case .pppoe: 51
        case .raw: 12
        case .loop: 108
        case .linuxSLL: 113
        case .linuxSLL2: 276
        case .ipv4: 228
        case .ipv6: 229
        case .other(let v): v
        }
    }

    public var description: String {
        switch self {
        case .null: "NULL"
        case .ethernet: "ETHERNET"
        case .ppp: "PPP"
        case .pppSerial: "PPP_HDLC"
        case .pppoe: "PPP_ETHER"
        case .raw: "RAW"
        case .loop: "LOOP"
        case .linuxSLL: "LINUX_SLL"
        case .linuxSLL2: "LINUX_SLL2"
        case .ipv4: "IPV4"
        case .ipv6: "IPV6"
        case .other(let v): "DLT \(v)"
        }
    }
}
