public import SystemPackage
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

    /// The whole file mapped read-only (private), `size` bytes; it stays mapped after the file is
    /// closed, until `unmap`. A file of 0 bytes cannot be mapped (EINVAL).
    public func mapWhole() throws(Errno) -> UnsafeRawBufferPointer {
        guard size > 0 else { throw .invalidArgument }
        guard let mapped = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor.rawValue, 0), mapped != MAP_FAILED else {
            throw Errno(rawValue: errno)
        }
        return UnsafeRawBufferPointer(start: mapped, count: size)
    }

    /// Releases a mapping from `mapWhole`.
    public static func unmap(_ mapping: UnsafeRawBufferPointer) {
        guard let base = mapping.baseAddress, mapping.count > 0 else { return }
        munmap(UnsafeMutableRawPointer(mutating: base), mapping.count)
    }
}
