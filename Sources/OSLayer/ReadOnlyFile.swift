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
    /// be mapped (EINVAL).
    public func mapWhole() throws(Errno) -> FileMapping {
        guard size > 0 else { throw .invalidArgument }
        return try map(offset: 0, count: size, populate: false)
    }

    /// The file's bytes [offset, offset + count) mapped read-only (private, guarded: `FileMapping`).
    /// `populate`: the pages are mapped now, in one system call, rather than a fault at a time as they
    /// are first read (MAP_POPULATE). ENOSPC when the guard has no room for another mapping (the caller
    /// reads without one).
    public func map(offset: Int, count: Int, populate: Bool) throws(Errno) -> FileMapping {
        guard offset >= 0, count > 0 else { throw .invalidArgument }
        let page = FileMapping.pageSize
        let aligned = offset & ~(page - 1)
        let length = count + (offset - aligned)
        let flags = MAP_PRIVATE | (populate ? MAP_POPULATE : 0)
        guard let base = mmap(nil, length, PROT_READ, flags, descriptor.rawValue, off_t(aligned)), base != MAP_FAILED else {
            throw Errno(rawValue: errno)
        }
        let slot = tunnelprobe_map_guard_register(base, length)
        guard slot >= 0 else {
            munmap(base, length)
            throw .noSpace
        }
        return FileMapping(base: base, length: length, skip: offset - aligned, slot: slot)
    }

}

/// Part of a file mapped read-only, unmapped when released. A mapped file that shrinks (truncated by
/// another process) or whose disk fails would end the process with SIGBUS at the first byte read past
/// its new end; the mapping is registered with a guard (CMapGuard) that puts a page of zeros there
/// instead and counts it: `damaged` then says the bytes are no longer all the file's, and the reader
/// stops with an error rather than a crash. Read it from one thread at a time.
public final class FileMapping {
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The bytes asked for (the mapping itself starts at the page boundary before them).
    public let bytes: UnsafeRawBufferPointer
    /// The guard's count of zero pages put in this mapping.
    private let faultCounter: UnsafePointer<UInt64>
    private let base: UnsafeMutableRawPointer
    private let length: Int
    private let slot: Int32

    fileprivate init(base: UnsafeMutableRawPointer, length: Int, skip: Int, slot: Int32) {
        self.base = base
        self.length = length
        self.slot = slot
        bytes = UnsafeRawBufferPointer(start: base + skip, count: length - skip)
        faultCounter = tunnelprobe_map_guard_counter(slot)
    }

    /// Some page of the mapping was read after the file no longer had it: its bytes read as zeros.
    public var damaged: Bool { tunnelprobe_map_guard_load(faultCounter) > 0 }

    deinit {
        tunnelprobe_map_guard_unregister(slot)
        munmap(base, length)
    }
}
