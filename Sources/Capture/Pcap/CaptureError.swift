/// Why a capture could not be opened, read, written or started: what failed and where.
public struct CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// The file does not exist or cannot be opened.
        case cannotOpen
        /// The file has no bytes.
        case emptyFile
        /// The file is neither pcap nor pcapng.
        case notACapture
        /// A record or block is cut short or inconsistent (`offset` says where).
        case corrupt
        /// A record's time is outside what Int64 nanoseconds since 1970 hold (1970 to 2262-04-11).
        case timestampOutOfRange
        /// The BPF filter does not compile.
        case badFilter
        /// The capture device cannot be opened or activated (missing, no permission).
        case deviceFailed
        /// Capturing needs CAP_NET_RAW (root) and this process lacks it.
        case permissionDenied
        /// Writing the capture file failed.
        case writeFailed
    }

    public let code: Code
    /// libpcap's message or our own.
    public let reason: String
    /// The file, or the device for a live capture.
    public let source: String
    /// Byte offset in the file where reading stopped, when known.
    public let offset: Int?

    public init(_ code: Code, _ reason: String, source: String, offset: Int? = nil) {
        self.code = code
        self.reason = reason
        self.source = source
        self.offset = offset
    }

    public var description: String {
        if let offset { return "\(source): \(reason) (at byte offset \(offset))" }
        return "\(source): \(reason)"
    }
}

extension CaptureError {
    /// libpcap's error buffer as text, up to its NUL.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
