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
        defer { ReadOnlyFile.unmap(mapping) }
        #expect(Array(mapping) == content)
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
