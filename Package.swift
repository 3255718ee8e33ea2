// swift-tools-version: 6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let nio: [Target.Dependency] = [
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
]

let package = Package(
    name: "tunnelprobe",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tunnelprobe", targets: ["tunnelprobe"]),
        .library(name: "OSLayer", targets: ["OSLayer"]),
        .library(name: "Base", targets: ["Base"]),
        .library(name: "Results", targets: ["Results"]),
        .library(name: "DNSWire", targets: ["DNSWire"]),
        .library(name: "Fates", targets: ["Fates"]),
        .library(name: "EngineModels", targets: ["EngineModels"]),
        .library(name: "ProbeProtocol", targets: ["ProbeProtocol"]),
        .library(name: "ProbeServer", targets: ["ProbeServer"]),
        .library(name: "ProbeClient", targets: ["ProbeClient"]),
        .library(name: "PathMetrics", targets: ["PathMetrics"]),
        .library(name: "Capture", targets: ["Capture"]),
        .library(name: "TraceAnalysis", targets: ["TraceAnalysis"]),
        .library(name: "Impairment", targets: ["Impairment"]),
        .library(name: "FEC", targets: ["FEC"]),
        .library(name: "LinkSim", targets: ["LinkSim"]),
        .library(name: "TunnelVerify", targets: ["TunnelVerify"]),
        .library(name: "Reports", targets: ["Reports"]),
        .library(name: "Lab", targets: ["Lab"]),
        .library(name: "TunnelprobeCommands", targets: ["TunnelprobeCommands"]),
        .library(name: "FuzzEntries", targets: ["FuzzEntries"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // DNS over TLS (RFC 7858) and over HTTPS (RFC 8484): ProbeClient/Transports only.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        // SOCKS5 (RFC 1928) from inside the sandbox: TunnelVerify's SandboxConnection only.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ],
    targets: [
        // What every layer shares, pure (no process or system-call code): the seeded generator, the Wilson
        // interval, Gilbert-Elliott parameters and their text form, addresses, the report time format.
        .target(name: "Base", dependencies: ["CInetAddress"], swiftSettings: strict),
        // The Codable results the measuring modules produce and Reports renders: Base and Foundation only
        // (no NIO, pcap, Subprocess), so that rendering a report never pulls in a measuring module.
        // Every report's types: scan (ScanReport, ScanPair, EngineScan and the engine figures), path
        // (PathReport, PathAnalysis and its statistics), trace, simulate, rank, monitor, sweep, verify, resilience.
        .target(name: "Results", dependencies: ["Base"], swiftSettings: strict),
        // inet_pton alone, so that Base parses addresses as the kernel does without importing Glibc.
        .systemLibrary(name: "CInetAddress"),
        // The one OS layer and the only module that imports Glibc: system calls with EINTR retried and a
        // typed Errno (swift-system), programs run, launched and terminated (swift-subprocess), network
        // namespaces, socket addresses, atomic file writes, this process's memory.
        .target(
            name: "OSLayer",
            dependencies: [
                "Base", "CMalloc", "CMapGuard", "CSocketBatch",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            swiftSettings: strict
        ),
        // glibc's malloc.h (mallinfo2, mallopt), which the Glibc module leaves out: memory figures.
        .systemLibrary(name: "CMalloc"),
        // A cache prefetch hint (__builtin_prefetch) for trace's transaction matcher.
        .systemLibrary(name: "CPrefetch"),
        // sendmmsg/recvmmsg (glibc declares them only under _GNU_SOURCE): the sweep's batched send path.
        .target(name: "CSocketBatch"),
        // A SIGBUS guard for mapped files (a capture truncated while it is read): zeros and a count
        // instead of the end of the process (OSLayer's FileMapping).
        .target(name: "CMapGuard"),
        // SHA-256 as a C value (the SHA extensions when the CPU has them): HMAC tags per probe
        // without swift-crypto's allocation per copied hash state (ProbeProtocol's KeyedHMAC).
        .target(name: "CSHA256"),
        // The per-packet fates interchange format (docs/FATES.md) that path, trace, impair and simulate share.
        .target(name: "Fates", dependencies: ["Base", "OSLayer"], swiftSettings: strict),
        // RFC 1035 / RFC 6891 message codec, label payload codecs, QNAME capacity arithmetic.
        .target(name: "DNSWire", swiftSettings: strict),
        // How each tunnel engine (MasterDnsVPN Go and Python, dnstt, slipstream, iodine) turns a pair's
        // measured name length and response sizes into the numbers its user types (docs/ENGINES.md).
        .target(name: "EngineModels", dependencies: ["Base", "Results"], swiftSettings: strict),
        // The probe wire format shared by client and responder (docs/PROTOCOL.md), and MasterDnsVPN's
        // own MTU-test requests (`scan --server masterdnsvpn`).
        .target(
            name: "ProbeProtocol",
            dependencies: [
                "Base", "DNSWire", "CSHA256", .product(name: "Crypto", package: "swift-crypto"),
                // ChaCha20 without Poly1305 (MasterDnsVPN's encryption method 2).
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // The authoritative responder (SwiftNIO UDP), its path history and its leak zone.
        .target(
            name: "ProbeServer",
            dependencies: ["DNSWire", "ProbeProtocol", .product(name: "Logging", package: "swift-log")] + nio,
            swiftSettings: strict
        ),
        // The query engine, the resolver list, the MTU search, the scan pipeline and the path stream.
        .target(
            name: "ProbeClient",
            dependencies: [
                "Base", "OSLayer", "Results", "DNSWire", "ProbeProtocol", "PathMetrics", "Fates", "EngineModels",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                // The TCP, DoT and DoH transports (Transports/).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
            ] + nio,
            swiftSettings: strict
        ),
        // A path stream's analysis from its records: loss (RFC 7680, 3357, Gilbert), reordering (RFC 4737),
        // delay (RFC 3550, 3393) into Results' PathAnalysis; delay percentiles through HdrHistogram.
        .target(
            name: "PathMetrics",
            dependencies: ["Base", "Results", .product(name: "Histogram", package: "hdrhistogram-swift")],
            swiftSettings: strict
        ),
        // libpcap (Debian libpcap-dev) as a system library: offline reading, live capture, pcap writing.
        .systemLibrary(name: "CPcap", pkgConfig: "libpcap", providers: [.apt(["libpcap-dev"])]),
        // Capture files and live capture through libpcap; link, IP (with fragment reassembly), UDP and TCP decoding.
        .target(name: "Capture", dependencies: ["Base", "OSLayer", "CPcap"], swiftSettings: strict),
        // DNS transaction matching over captures: per resolver / tunnel domain / type metrics and fates.
        .target(
            name: "TraceAnalysis",
            dependencies: [
                "Base", "Results", "Capture", "Fates", "CPrefetch",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            // Optimised in debug builds too: the tests replay millions of channel opportunities, which
            // unoptimised took 71 s of `make check` (FECAdviceTests); LinkSim has no assert() to lose.
            swiftSettings: strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // impair: the user-space netem relay for UDP, its seeded models and its ground-truth log.
        .target(
            name: "Impairment",
            dependencies: ["Base", "OSLayer", "DNSWire", "Fates", .product(name: "HeapModule", package: "swift-collections")] + nio,
            swiftSettings: strict
        ),
        // Intel ISA-L (Debian libisal-dev) as a system library: Reed-Solomon over GF(2^8).
        .systemLibrary(name: "CISAL", pkgConfig: "libisal", providers: [.apt(["libisal-dev"])]),
        // Reed-Solomon through ISA-L, FEC levels and the sender's group framing.
        .target(name: "FEC", dependencies: ["Base", "CISAL"], swiftSettings: strict),
        // The FEC + ARQ simulator: channels from fates or models, traffic, sender, receiver, metrics.
        .target(
            name: "LinkSim",
            dependencies: [
                "Base", "Results", "FEC", "Fates",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            // Optimised in debug builds too: the tests replay millions of channel opportunities, which
            // unoptimised took 71 s of `make check` (FECAdviceTests); LinkSim has no assert() to lose.
            swiftSettings: strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // `verify`: real engines over TUN in a sandbox namespace, phases and leak checks.
        .target(
            name: "TunnelVerify",
            dependencies: ["Base", "OSLayer", "Results", "DNSWire", "ProbeProtocol", "Capture", "EngineModels",
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOSOCKS", package: "swift-nio-extras")],
            swiftSettings: strict
        ),
        // Report documents' Markdown and HTML renderings, run directories, merge and compare: it renders
        // Results and depends on no measuring module (no SwiftNIO, libpcap, ISA-L).
        .target(name: "Reports", dependencies: ["Base", "OSLayer", "Results"], swiftSettings: strict),
        // The namespace testbed: client, resolver (real unbound), server, tunnel servers, impairment relay.
        .target(
            name: "Lab",
            dependencies: [
                "Base", "OSLayer", "DNSWire", "ProbeProtocol", "ProbeServer",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Every command, its flags and exit codes: a library so that tests and the fuzz targets reach
        // them in process; the executable below only runs its root command.
        .target(
            name: "TunnelprobeCommands",
            dependencies: [
                "Base", "OSLayer", "Results", "DNSWire", "Fates", "EngineModels", "ProbeProtocol", "ProbeServer", "ProbeClient", "PathMetrics", "Capture", "TraceAnalysis",
                "Impairment", "FEC", "LinkSim", "TunnelVerify", "Reports", "Lab",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ] + nio,
            swiftSettings: strict
        ),
        // The release binary carries the Swift runtime and Foundation (`-static-stdlib`): a run starts
        // in about 10 ms instead of 15 (no symbol lookups across 16 Swift libraries at start-up), which
        // every short command pays (`trace`, `report render`; docs/TRACE.md). Debug builds link them
        // dynamically, as the tests do.
        .executableTarget(
            name: "tunnelprobe", dependencies: ["TunnelprobeCommands"], swiftSettings: strict,
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-lCoreFoundation", "-l_FoundationICU", "-l_FoundationCShims", "-l_FoundationCollections"], .when(platforms: [.linux], configuration: .release))]
        ),
        // What each fuzz target does with its input: the libFuzzer driver (Fuzz/, scripts/fuzz.sh) and
        // the regression tests (Tests/FuzzRegressionTests) run the same entries.
        .target(
            name: "FuzzEntries",
            dependencies: ["Base", "Capture", "DNSWire", "Fates", "Impairment", "ProbeClient", "Reports", "Results", "TraceAnalysis", "TunnelVerify", "TunnelprobeCommands"],
            path: "Fuzz/Entries",
            swiftSettings: strict
        ),
        // What every test suite shares: the lab gate, the binary under test, golden files (Tests/TestSupport).
        .target(name: "TestSupport", dependencies: ["Base", "OSLayer"], path: "Tests/TestSupport"),
        .testTarget(name: "BaseTests", dependencies: ["Base"]),
        .testTarget(name: "OSLayerTests", dependencies: ["OSLayer", "Base", .product(name: "SystemPackage", package: "swift-system")]),
        // Rules over the test sources themselves: every lab suite is left out of `make check` by its gate (LabGate).
        .testTarget(name: "SuiteRulesTests"),
        // The commands in process through the binary's entry point (`TunnelProbe.execute`): flags, error
        // lines, exit statuses, reports; and a few smoke tests of the built binary itself.
        .testTarget(name: "CommandLineTests", dependencies: ["Results", "TunnelprobeCommands", "Impairment", "Base", "Fates", "ProbeClient", "TunnelVerify",
                                                             "Reports", "TestSupport"]),
        .testTarget(name: "DNSWireTests", dependencies: ["DNSWire", "Base"]),
        .testTarget(name: "FatesTests", dependencies: ["Fates", "Base"]),
        .testTarget(name: "EngineModelsTests", dependencies: ["Results", "EngineModels"], resources: [.copy("Fixtures")]),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzEntries", "TestSupport"]),
        .testTarget(
            name: "ProbeProtocolTests",
            dependencies: ["ProbeProtocol", "DNSWire", "Base", "CSHA256", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "ProbeServerTests",
            dependencies: ["Results", "ProbeServer", "ProbeProtocol", "DNSWire", "ProbeClient", "PathMetrics", "Reports", "Base", "Fates"] + nio
        ),
        // Fixtures/mdv-server: captures of the real MasterDnsVPN server, read by path (#filePath).
        .testTarget(name: "ProbeClientTests", dependencies: ["Results", "ProbeClient", "OSLayer", "EngineModels", "ProbeProtocol", "DNSWire", "Reports", "Base", "Fates"] + nio,
                    exclude: ["Fixtures"]),
        .testTarget(name: "PathMetricsTests", dependencies: ["Results", "PathMetrics", "Base"]),
        .testTarget(name: "CaptureTests", dependencies: ["TestSupport", "Capture", "Base"]),
        .testTarget(name: "TraceAnalysisTests", dependencies: ["Results", "TraceAnalysis", "Capture", "Reports", "DNSWire", "Fates", "TestSupport"]),
        .testTarget(name: "FECTests", dependencies: ["FEC"]),
        .testTarget(name: "LinkSimTests", dependencies: ["Results", "TestSupport", "LinkSim", "FEC", "Reports", "Base", "Fates"]),
        .testTarget(name: "ImpairmentTests", dependencies: ["Impairment", "DNSWire", "Base", "Fates", "ProbeClient"] + nio),
        .testTarget(name: "TunnelVerifyTests", dependencies: ["TestSupport", "Base", "OSLayer", "Results", "TunnelVerify", "Lab", "Reports"], exclude: ["Golden"],
                    resources: [.copy("Fixtures")]),
        .testTarget(name: "ReportsTests", dependencies: ["TestSupport", "OSLayer", "Results", "Reports", "EngineModels", "PathMetrics", "Base", "TraceAnalysis", "ProbeClient", "TunnelVerify"], exclude: ["Golden"]),
        .testTarget(
            name: "LabTests",
            dependencies: ["Results", "TestSupport", "Lab", "ProbeClient", "ProbeProtocol", "Reports", "EngineModels", "PathMetrics", "DNSWire", "Impairment", "Base", "Fates", "OSLayer"]
        ),
    ]
)
