import OSLayer
import Testing

/// The packet path's route: /proc/net/route and /proc/net/arp as the kernel prints them (addresses
/// as little-endian hexadecimal words on x86), and the choice of one route for all the ranges.
@Suite struct PacketRouteTableTests {
    static func ip(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) -> UInt32 { a << 24 | b << 16 | c << 8 | d }

    // A default route via 198.18.255.1 on veth0, 198.18.255.0/30 on-link, and 198.19.128.0/17 via
    // another gateway on veth1; the header line as the kernel writes it.
    static let routes = """
    Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
    veth0\t00000000\t01FF12C6\t0003\t0\t0\t0\t00000000\t0\t0\t0
    veth0\t00FF12C6\t00000000\t0001\t0\t0\t0\tFCFFFFFF\t0\t0\t0
    veth1\t008013C6\t05FF12C6\t0003\t0\t0\t0\t0080FFFF\t0\t0\t0
    veth2\t000013C6\t09FF12C6\t0203\t0\t0\t0\t0000FFFF\t0\t0\t0
    broken line
    """

    @Test func routesReadAsTheKernelPrintsThem() {
        let entries = PacketRouteTable.parseRoutes(Self.routes)
        #expect(entries.count == 4)
        #expect(entries[0].interface == "veth0" && entries[0].gateway == Self.ip(198, 18, 255, 1) && entries[0].viaGateway)
        #expect(entries[1].destination == Self.ip(198, 18, 255, 0) && entries[1].prefixLength == 30 && !entries[1].viaGateway)
        #expect(entries[2].destination == Self.ip(198, 19, 128, 0) && entries[2].prefixLength == 17)
        #expect(!entries[3].usable, "RTF_REJECT")
        let lookup = PacketRouteTable.lookup(Self.ip(198, 19, 200, 1), in: entries)
        #expect(lookup?.interface == "veth1")
        #expect(PacketRouteTable.lookup(Self.ip(198, 19, 1, 1), in: entries)?.interface == "veth0", "the reject route is not taken")
    }

    @Test func oneRouteForAllTheRangesOrAReason() {
        let entries = PacketRouteTable.parseRoutes(Self.routes)
        let low: [(first: UInt32, last: UInt32)] = [(Self.ip(198, 19, 0, 0), Self.ip(198, 19, 127, 255))]
        guard case .success(let e) = PacketRouteTable.choose(for: low, in: entries) else { Issue.record("no route"); return }
        #expect(e.interface == "veth0")
        let high: [(first: UInt32, last: UInt32)] = [(Self.ip(198, 19, 128, 0), Self.ip(198, 19, 255, 255))]
        guard case .success(let h) = PacketRouteTable.choose(for: high, in: entries) else { Issue.record("no route"); return }
        #expect(h.interface == "veth1")
        // The whole /16 is split by the /17 via veth1.
        let whole: [(first: UInt32, last: UInt32)] = [(Self.ip(198, 19, 0, 0), Self.ip(198, 19, 255, 255))]
        guard case .failure = PacketRouteTable.choose(for: whole, in: entries) else { Issue.record("a split range got one route"); return }
        // A block inside the range splitting route, e.g. 198.19.0.0/24 and 198.19.200.0/24 together.
        let apart: [(first: UInt32, last: UInt32)] = [(Self.ip(198, 19, 0, 0), Self.ip(198, 19, 0, 255)), (Self.ip(198, 19, 200, 0), Self.ip(198, 19, 200, 255))]
        guard case .failure = PacketRouteTable.choose(for: apart, in: entries) else { Issue.record("two routes taken as one"); return }
        guard case .failure = PacketRouteTable.choose(for: low, in: []) else { Issue.record("a route from no table"); return }
    }

    @Test func neighboursOnlyComplete() {
        let text = """
        IP address       HW type     Flags       HW address            Mask     Device
        198.18.255.1     0x1         0x2         0a:1b:2c:3d:4e:5f     *        veth0
        198.18.255.5     0x1         0x0         00:00:00:00:00:00     *        veth0
        198.18.255.9     0x1         0x2         zz:1b:2c:3d:4e:5f     *        veth0
        999.1.1.1        0x1         0x2         0a:1b:2c:3d:4e:5f     *        veth0
        """
        let n = PacketRouteTable.parseNeighbours(text)
        #expect(n.count == 1)
        #expect(n.first?.address == Self.ip(198, 18, 255, 1) && n.first?.device == "veth0")
        #expect(n.first?.linkAddress == [0x0A, 0x1B, 0x2C, 0x3D, 0x4E, 0x5F])
    }
}
