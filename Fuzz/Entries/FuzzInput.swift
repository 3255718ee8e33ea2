import Foundation

/// What every fuzz target needs beside its parser: the input as bytes, and a scratch file or
/// directory for the readers that take a path (libpcap opens files; a report is a directory).
public enum FuzzInput {
    /// libFuzzer's buffer as an array (it may pass a null pointer with size 0).
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// A directory of this process's own under /dev/shm (memory, so millions of writes cost no disk).
    public static let scratch: String = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let path = "\(base)/tunnelprobe-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// Writes the input to `name` in the scratch directory and returns the file's path.
    public static func file(_ bytes: [UInt8], name: String) -> String {
        let path = "\(scratch)/\(name)"
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }
}
