// swift-tools-version: 6.2
import PackageDescription

// The libFuzzer driver for every parser of untrusted input, kept in its own package (and .build)
// because it is compiled with -sanitize=fuzzer: scripts/fuzz.sh (`make fuzz`) builds it with the
// sanitizer flags and runs one entry per TUNNELPROBE_FUZZ_TARGET. What each entry does lives in the
// root package (Fuzz/Entries, target FuzzEntries), where the regression tests run it too.
// A path dependency's identity is its directory's name, so derive it rather than spell it.
let rootPackage: String = {
    let parent = Context.packageDirectory.split(separator: "/").dropLast().last ?? ""
    return String(parent).lowercased()
}()

let package = Package(
    name: "tunnelprobe-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        // libFuzzer's LLVMFuzzerRunDriver, declared for Swift (the definition comes with -sanitize=fuzzer).
        .target(name: "CLibFuzzer", path: "CLibFuzzer"),
        .executableTarget(
            name: "tunnelprobe-fuzz",
            dependencies: ["CLibFuzzer", .product(name: "FuzzEntries", package: rootPackage)],
            path: "Driver",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ]
)
