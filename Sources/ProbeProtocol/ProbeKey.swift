public import Crypto
import Foundation

/// The pre-shared key that client and responder use to authenticate probes (HMAC-SHA256).
///
/// A key file holds the key as hexadecimal text (whitespace ignored), at least 16 bytes.
/// `@unchecked Sendable`: `SymmetricKey` is an immutable value that swift-crypto 3 does not mark Sendable.
public struct ProbeKey: @unchecked Sendable {
    public let symmetricKey: SymmetricKey
    /// HMAC-SHA256 with the key's pad blocks already absorbed: copied for each tag.
    let keyedHMAC: KeyedHMAC
    /// The ChaCha20 key of the payload keystream: HMAC-SHA256(K, "tunnelprobe keystream"), so the
    /// cipher never runs under the pre-shared key itself.
    let streamKey: SymmetricKey

    public static let minimumBytes = 16

    public init(bytes: [UInt8]) throws(ProbeKeyError) {
        guard bytes.count >= Self.minimumBytes else {
            throw ProbeKeyError(path: nil, reason: "key is \(bytes.count) bytes; at least \(Self.minimumBytes) are needed")
        }
        symmetricKey = SymmetricKey(data: bytes)
        keyedHMAC = KeyedHMAC(key: bytes)
        streamKey = Self.streamKey(keyedHMAC)
    }

    /// Parses the hexadecimal text of a key file.
    public init(hexText: String, path: String? = nil) throws(ProbeKeyError) {
        var bytes: [UInt8] = []
        var high: UInt8?
        for (offset, scalar) in hexText.unicodeScalars.enumerated() {
            if scalar.properties.isWhitespace { continue }
            guard let nibble = Self.nibble(scalar) else {
                throw ProbeKeyError(path: path, reason: "character \(offset + 1) is not hexadecimal")
            }
            if let h = high {
                bytes.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        guard high == nil else { throw ProbeKeyError(path: path, reason: "odd number of hexadecimal digits") }
        guard bytes.count >= Self.minimumBytes else {
            throw ProbeKeyError(path: path, reason: "key is \(bytes.count) bytes; at least \(Self.minimumBytes) are needed")
        }
        symmetricKey = SymmetricKey(data: bytes)
        keyedHMAC = KeyedHMAC(key: bytes)
        streamKey = Self.streamKey(keyedHMAC)
    }

    private static func streamKey(_ hmac: KeyedHMAC) -> SymmetricKey {
        var derivation = hmac
        derivation.update(Array("tunnelprobe keystream".utf8))
        return derivation.finalize { SymmetricKey(data: $0) }
    }

    /// Reads a key file.
    public static func load(path: String) throws(ProbeKeyError) -> ProbeKey {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ProbeKeyError(path: path, reason: "cannot read key file (\(Self.describe(error)))")
        }
        return try ProbeKey(hexText: text, path: path)
    }

    /// A fresh random 32-byte key as the hexadecimal text of a key file.
    public static func generateHexText() -> String {
        let key = SymmetricKey(size: .bits256)
        return key.withUnsafeBytes { raw in raw.map { byte in Self.hex(byte) }.joined() } + "\n"
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    private static func nibble(_ scalar: Unicode.Scalar) -> UInt8? {
        switch scalar.value {
        case 0x30...0x39: UInt8(scalar.value - 0x30)
        case 0x61...0x66: UInt8(scalar.value - 0x61 + 10)
        case 0x41...0x46: UInt8(scalar.value - 0x41 + 10)
        default: nil
        }
    }

    private static func describe(_ error: any Error) -> String {
        let ns = error as NSError
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain,
           let code = POSIXErrorCode(rawValue: Int32(underlying.code)) {
            return String(describing: POSIXError(code).localizedDescription)
        }
        return ns.localizedDescription
    }
}

public struct ProbeKeyError: Error, CustomStringConvertible, Sendable {
    public let path: String?
    public let reason: String
    public var description: String {
        if let path { return "key file \(path): \(reason)" }
        return reason
    }
}
