import Foundation
import FuzzEntries

/// libFuzzer supplies `main` (this target is built with -sanitize=fuzzer and -parse-as-library);
/// TUNNELPROBE_FUZZ_TARGET names which entry gets the inputs (scripts/fuzz.sh sets it).
let entry: FuzzEntry = {
    let name = ProcessInfo.processInfo.environment["TUNNELPROBE_FUZZ_TARGET"] ?? ""
    guard let entry = FuzzEntry(rawValue: name) else {
        let known = FuzzEntry.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("set TUNNELPROBE_FUZZ_TARGET to one of \(known)\n".utf8))
        exit(64)
    }
    return entry
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    entry.run(FuzzInput.bytes(data, size))
    return 0
}
