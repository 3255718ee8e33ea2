public import Foundation
import Base
import OSLayer

/// Writes report documents and their renderings into a run directory.
public enum ReportWriter {
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return e
    }

    public static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self) + "\n"
    }

    /// Writes `files` (name -> text) under `directory`, creating it. Throws with the path that failed.
    /// `durable`: each file is synced to disk before it replaces the old one (Foundation's atomic write).
    /// Files rendered from the JSON beside them (pages, Markdown, summaries, the index cache) pass false:
    /// written under a temporary name and renamed, without that fsync, which on a busy disk waits behind
    /// other processes' writeback (a trace run's five fsyncs made its wall time 0.6-4.6 s for 0.3 s of CPU).
    public static func write(_ files: [(String, String)], to directory: String, durable: Bool = true) throws(ReportWriteError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ReportWriteError(path: directory, reason: "cannot create directory (\(error.localizedDescription))")
        }
        for (name, text) in files {
            let path = (directory as NSString).appendingPathComponent(name)
            do {
                if name.contains("/") {
                    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                            withIntermediateDirectories: true)
                }
                if durable {
                    try text.write(toFile: path, atomically: true, encoding: .utf8)
                } else {
                    // Foundation's Data.write syncs even when not atomic: OSLayer's write-and-rename does not.
                    try AtomicFile.write(path, text.utf8)
                }
            } catch let error as AtomicFile.WriteError {
                throw ReportWriteError(path: path, reason: "cannot write (\(error.errno))")
            } catch {
                throw ReportWriteError(path: path, reason: "cannot write (\(error.localizedDescription))")
            }
        }
    }

    /// A run id that sorts by time: `20261121-184800-scan-3f9a`.
    public static func runID(kind: String, date: Date = Date()) -> String {
        let suffix = String(UInt16.random(in: 0...UInt16.max), radix: 16)
        return "\(Timestamp.compact(date))-\(kind)-\(suffix)"
    }

    public static func timestamp(_ date: Date = Date()) -> String {
        Timestamp.rfc3339(date)
    }
}

public struct ReportWriteError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let reason: String
    public var description: String { "\(path): \(reason)" }
}
