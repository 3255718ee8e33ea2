import ArgumentParser
import Foundation
import Base
import ProbeClient

/// `--resolver` and `--resolvers FILE`, as `scan` and `path` take them.
struct ResolverOptions: ParsableArguments {
    @Option(name: .customLong("resolver"), help: "A resolver: ip, ip:port, [v6]:port, a CIDR block, tcp://ip[:53], tls://ip[:853][#name] or https://ip[:443]/dns-query[#name] (repeatable).")
    var entries: [String] = []

    @Option(name: .customLong("resolvers"), help: "File of resolvers, one per line (# comments).")
    var files: [String] = []

    var isEmpty: Bool { entries.isEmpty && files.isEmpty }

    /// Every `--resolver` (a bad one is a usage error) and every line of every file; a bad line is
    /// kept in `issues` with its file and line number, for the caller to warn about or refuse.
    /// `streams`: whether the command measures over TCP, TLS and HTTPS (`scan`); a command that
    /// does not refuses such resolvers rather than asking them over UDP.
    func list(cidrCap: Int, streams: Bool = false) throws -> ResolverList {
        var list = ResolverList()
        for entry in entries where entry.contains("://") {
            do {
                if let clash = list.add(try ResolverTarget(parsing: entry)) { throw fail("--resolver \(entry): \(clash)", .validationFailure) }
            } catch let error as ResolverTargetError {
                throw fail("--resolver \(entry): \(error)", .validationFailure)
            }
        }
        for entry in entries where !entry.contains("://") {
            do { try list.add(entry: entry, cidrCap: cidrCap) } catch {
                throw fail("--resolver \(entry): \(error)", .validationFailure)
            }
        }
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw fail("--resolvers \(file): cannot read the file", Exit.badInput)
            }
            // Bytes, not text: a list with CRLF line ends, a BOM or a stray Latin-1 byte is still read line by line.
            list.add(bytes: Array(data), source: file, cidrCap: cidrCap)
        }
        if !streams, let target = list.targets.values.min() {
            throw fail("\(target): this command asks resolvers over UDP only (scan measures tcp://, tls:// and https://)", .validationFailure)
        }
        return list
    }
}
