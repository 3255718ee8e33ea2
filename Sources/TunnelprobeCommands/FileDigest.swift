import Crypto
import Foundation

/// The SHA-256 a report records for each input file (a capture, a fates file, a ranges list).
enum FileDigest {
    /// The file's digest in hexadecimal, read a megabyte at a time; nil when it cannot be read.
    static func sha256(path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        return hex(hasher.finalize())
    }

    /// The digest of bytes already read, in hexadecimal.
    static func sha256(_ data: Data) -> String { hex(SHA256.hash(data: data)) }

    private static func hex(_ digest: SHA256.Digest) -> String { digest.map { String(format: "%02x", $0) }.joined() }
}
