// swift-tools-version: 6.2
import PackageDescription

// Benchmarks for the root package's DNSWire codec, kept in their own package (and their own
// .build) so the root package does not depend on package-benchmark.
// Run with scripts/bench-codec.sh, or from this directory:
//   swift package --disable-sandbox benchmark --target DNSCodecBenchmarks
// A path dependency's identity is its directory's name ("main" in /work/main, something else in
// another clone), so derive it rather than spell it.
let rootPackage: String = {
    let parent = Context.packageDirectory.split(separator: "/").dropLast().last ?? ""
    return String(parent).lowercased()
}()

let package = Package(
    name: "tunnelprobe-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        // ordo-one/benchmark, formerly package-benchmark: the old URL and identifier still work
        // but make the plugin print a deprecation warning on every run.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The plugin requires benchmark targets to live in a directory named "Benchmarks".
        .executableTarget(
            name: "DNSCodecBenchmarks",
            dependencies: [
                .product(name: "DNSWire", package: rootPackage),
                .product(name: "Impairment", package: rootPackage),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "DNSCodecBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // ISA-L through the FEC wrapper, timed like the C anchor in scripts/bench-simulate.sh (plain
        // executable: both print the same line so the script can set them side by side).
        .executableTarget(
            name: "FECThroughput",
            dependencies: [.product(name: "FEC", package: rootPackage)],
            path: "FECThroughput"
        ),
    ]
)
