// swift-tools-version: 6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "tunnelprobe",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tunnelprobe", targets: ["tunnelprobe"]),
        .library(name: "DNSWire", targets: ["DNSWire"]),
        .library(name: "ProbeProtocol", targets: ["ProbeProtocol"]),
        .library(name: "ProbeServer", targets: ["ProbeServer"]),
        .library(name: "ProbeClient", targets: ["ProbeClient"]),
        .library(name: "Reports", targets: ["Reports"]),
        .library(name: "Lab", targets: ["Lab"]),
        .library(name: "FEC", targets: ["FEC"]),
        .library(name: "LinkSim", targets: ["LinkSim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
        // RFC 1035 / RFC 6891 message codec, label payload codecs, QNAME capacity arithmetic.
        .target(name: "DNSWire", swiftSettings: strict),
        // The probe wire format shared by client and responder (docs/PROTOCOL.md).
        .target(
            name: "ProbeProtocol",
            dependencies: ["DNSWire", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // The authoritative responder (SwiftNIO UDP).
        .target(
            name: "ProbeServer",
            dependencies: [
                "DNSWire", "ProbeProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The query engine, the resolver list, the MTU search and the scan pipeline.
        .target(
            name: "ProbeClient",
            dependencies: [
                "DNSWire", "ProbeProtocol", "Reports",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Versioned report documents, their Markdown renderings and engine exports.
        .target(name: "Reports", swiftSettings: strict),
        // libpcap (Debian libpcap-dev) as a system library: offline reading, live capture, pcap writing.
        .systemLibrary(name: "CPcap", pkgConfig: "libpcap", providers: [.apt(["libpcap-dev"])]),
        // The namespace testbed: client, resolver (real unbound) and server namespaces.
        .target(
            name: "Lab",
            dependencies: [
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Intel ISA-L (Debian libisal-dev) as a system library: Reed-Solomon over GF(2^8).
        .systemLibrary(name: "CISAL", pkgConfig: "libisal", providers: [.apt(["libisal-dev"])]),
        // Reed-Solomon through ISA-L, FEC levels and the sender's group framing.
        .target(name: "FEC", dependencies: ["CISAL"], swiftSettings: strict),
        // The FEC + ARQ simulator: channels from fates or models, traffic, sender, receiver, metrics.
        .target(
            name: "LinkSim",
            dependencies: [
                "FEC", "Reports",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "tunnelprobe",
            dependencies: [
                "DNSWire", "ProbeProtocol", "ProbeServer", "ProbeClient", "Reports", "Lab", "FEC", "LinkSim",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "DNSWireTests", dependencies: ["DNSWire"]),
        .testTarget(name: "ProbeProtocolTests", dependencies: ["ProbeProtocol", "DNSWire"]),
        .testTarget(
            name: "ProbeServerTests",
            dependencies: [
                "ProbeServer", "ProbeProtocol", "DNSWire", "ProbeClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "ProbeClientTests", dependencies: ["ProbeClient", "ProbeProtocol", "DNSWire", "Reports"]),
        .testTarget(name: "ReportsTests", dependencies: ["Reports"], exclude: ["Golden"]),
        .testTarget(name: "FECTests", dependencies: ["FEC"]),
        .testTarget(name: "LinkSimTests", dependencies: ["LinkSim", "FEC", "Reports"]),
        .testTarget(name: "LabTests", dependencies: ["Lab", "ProbeClient", "ProbeProtocol", "Reports"]),
    ]
)
