public import SystemPackage
import CMapGuard
#if canImport(Glibc)
import Glibc
#endif

/// A regular file opened for reading at offsets: what the capture readers need of the system (the
/// classic pcap block reader reads it in large blocks, the pcapng reader maps it whole). Closed when
/// released. Failures are a typed `Errno`; EINTR is retried here.
public final class ReadOnlyFile {
    /// The file's size when it was opened.
    public let size: Int
    private let descriptor: FileDescriptor

    /// Why a file could not be opened for reading.
    public enum OpenError: Error, Sendable {
        /// open(2) failed.
        case open(Errno)
        /// fstat(2) failed.
        case status(Errno)
        /// Not a regular file (a directory, a FIFO, a device).
        case notRegular
    }

    /// Opens `path` read-only (close-on-exec) and takes its size; `sequential` tells the kernel the file
    /// will be read from start to end (read-ahead, posix_fadvise(2)).
    public init(path: String, sequential: Bool = false) throws(OpenError) {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
        } catch let error as Errno {
            throw .open(error)
        } catch {
            throw .open(.ioError)
        }
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else {
            let code = Errno(rawValue: errno)
            try? fd.close()
            throw .status(code)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            try? fd.close()
            throw .notRegular
        }
        if sequential { _ = posix_fadvise(fd.rawValue, 0, 0, POSIX_FADV_SEQUENTIAL) }
        descriptor = fd
        size = Int(info.st_size)
    }

    deinit {
        try? descriptor.close()
    }

    /// Reads up to `count` bytes at file offset `offset` into `buffer` (pread(2)); the bytes read, 0 at
    /// the end of the file.
    public func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int) throws(Errno) -> Int {
        do {
            return try descriptor.read(fromAbsoluteOffset: Int64(offset),
                                       into: UnsafeMutableRawBufferPointer(start: buffer, count: count), retryOnInterrupt: true)
        } catch let error as Errno {
            throw error
        } catch {
            throw .ioError
        }
    }

    /// The whole file mapped read-only (private, guarded: `FileMapping`). A file of 0 bytes cannot
    /// be mapped (EINVAL); ENOSPC when the guard has no room for another mapping.
    public func mapWhole() throws(Errno) -> FileMapping {
        guard size > 0 else { throw .invalidArgument }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor.rawValue, 0), base != MAP_FAILED else {
            throw Errno(rawValue: errno)
        }
        let slot = tunnelprobe_map_guard_register(base, size)
        guard slot >= 0 else {
            munmap(base, size)
            throw .noSpace
        }
        return FileMapping(base: base, length: size, slot: slot)
    }
}

/// A file mapped read-only, unmapped when released. A mapped file that shrinks (truncated by
/// another process) or whose disk fails would end the process with SIGBUS at the first byte read past
/// its new end; the mapping is registered with a guard (CMapGuard) that puts a page of zeros there
/// instead and counts it: `damaged` then says the bytes are no longer all the file's, and the reader
/// stops with an error rather than a crash. Read it from one thread at a time.
public final class FileMapping {
    /// The file's bytes.
    public let bytes: UnsafeRawBufferPointer
    private let slot: Int32

    fileprivate init(base: UnsafeMutableRawPointer, length: Int, slot: Int32) {
        self.slot = slot
        bytes = UnsafeRawBufferPointer(start: base, count: length)
    }

    /// Some page of the mapping was read after the file no longer had it: its bytes read as zeros.
    public var damaged: Bool { tunnelprobe_map_guard_faults(slot) > 0 }

    deinit {
        tunnelprobe_map_guard_unregister(slot)
        munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count)
    }
}
