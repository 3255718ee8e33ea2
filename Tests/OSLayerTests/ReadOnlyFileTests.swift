import Foundation
import OSLayer
import SystemPackage
import Testing

/// The capture readers' file: reads at offsets, the whole file mapped, and each way opening fails.
@Suite struct ReadOnlyFileTests {
    static func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "tp-readonly-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func readsAtOffsetsAndMapsTheSameBytes() throws {
        let content = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let path = try Self.temporaryFile(content)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try ReadOnlyFile(path: path, sequential: true)
        #expect(file.size == content.count)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        let n = try file.read(into: buffer, count: 4096, at: 9_000)
        #expect(n == 1_000 && Array(UnsafeRawBufferPointer(start: buffer, count: n)) == Array(content[9_000...]))
        #expect(try file.read(into: buffer, count: 16, at: 10_000) == 0)
        let mapping = try file.mapWhole()
        #expect(Array(mapping.bytes) == content)
        #expect(!mapping.damaged)
    }

    /// A mapped file truncated under its reader: the pages it lost read as zeros and the mapping says
    /// it is damaged, where the read would otherwise end the process with SIGBUS. The page it kept
    /// still reads as the file. Another mapping (of another file) is not marked.
    @Test func aFileTruncatedWhileMappedReadsZerosNotSIGBUS() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let content = (0..<(3 * page)).map { UInt8(truncatingIfNeeded: $0 % 251 + 1) }
        let path = try Self.temporaryFile(content)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let otherPath = try Self.temporaryFile(content)
        defer { try? FileManager.default.removeItem(atPath: otherPath) }
        let file = try ReadOnlyFile(path: path)
        let mapping = try file.mapWhole()
        let other = try ReadOnlyFile(path: otherPath).mapWhole()
        #expect(!mapping.damaged)
        #expect(truncate(path, off_t(page)) == 0)
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) == page)
        let bytes = mapping.bytes
        #expect(Array(bytes[0..<page]) == Array(content[0..<page]))
        #expect(bytes[page + 10] == 0 && bytes[3 * page - 1] == 0)
        #expect(mapping.damaged)
        #expect(!other.damaged && Array(other.bytes) == content)
    }

    @Test func missingDirectoryAndEmptyFilesAreTypedErrors() throws {
        #expect {
            _ = try ReadOnlyFile(path: "/nonexistent/tp-\(UUID().uuidString)")
        } throws: { error in
            if case .open(.noSuchFileOrDirectory) = error as? ReadOnlyFile.OpenError { return true }
            return false
        }
        #expect {
            _ = try ReadOnlyFile(path: NSTemporaryDirectory())
        } throws: { error in
            if case .notRegular = error as? ReadOnlyFile.OpenError { return true }
            return false
        }
        let empty = try Self.temporaryFile([])
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let file = try ReadOnlyFile(path: empty)
        #expect(file.size == 0)
        #expect(throws: Errno.invalidArgument) { _ = try file.mapWhole() }
    }
}
