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
        .library(name: "TunnelVerify", targets: ["TunnelVerify"]),
        .library(name: "Capture", targets: ["Capture"]),
        .library(name: "TraceAnalysis", targets: ["TraceAnalysis"]),
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
                .product(name: "DequeModule", package: "swift-collections"),
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
        // Capture files and live capture through libpcap; link, IP (with fragment reassembly), UDP and TCP decoding.
        .target(name: "Capture", dependencies: ["CPcap"], swiftSettings: strict),
        // DNS transaction matching over captures: per resolver / tunnel domain / type metrics and fates.
        .target(
            name: "TraceAnalysis",
            dependencies: [
                "Capture", "Reports",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // The namespace testbed: client, resolver (real unbound) and server namespaces.
        .target(
            name: "Lab",
            dependencies: [
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // `verify`: real engines over TUN in a sandbox namespace, phases and leak checks.
        .target(
            name: "TunnelVerify",
            dependencies: [
                "DNSWire", "ProbeProtocol", "Reports", "Capture",
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "tunnelprobe",
            dependencies: [
                "DNSWire", "ProbeProtocol", "ProbeServer", "ProbeClient", "Reports", "Lab", "TunnelVerify", "Capture",
                "TraceAnalysis",
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
        .testTarget(name: "CaptureTests", dependencies: ["Capture"]),
        .testTarget(name: "TraceAnalysisTests", dependencies: ["TraceAnalysis", "Capture", "Reports", "DNSWire"]),
        .testTarget(name: "ReportsTests", dependencies: ["Reports"], exclude: ["Golden"]),
        .testTarget(name: "LabTests", dependencies: ["Lab", "ProbeClient", "ProbeProtocol", "Reports"]),
        .testTarget(name: "TunnelVerifyTests", dependencies: ["TunnelVerify", "Lab", "Reports"], exclude: ["Golden"]),
    ]
)
