import CLibFuzzer
import Foundation
import FuzzEntries

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

/// The program's entry. SwiftPM links an executable target's `main` as `<module>_main`, so libFuzzer's
/// own `main` is not used: this one hands the command line to libFuzzer's driver (-parse-as-library
/// keeps Swift from emitting a `main` of its own).
@_cdecl("tunnelprobe_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    _ = entry
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
}
