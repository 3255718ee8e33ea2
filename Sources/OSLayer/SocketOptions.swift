import Glibc

/// The socket options every socket of this layer sets, in one place: one Int32 option, and the
/// buffer sizes (SO_RCVBUF/SO_SNDBUF, and as root their FORCE forms, which pass
/// net.core.rmem_max/wmem_max).
enum SocketOptions {
    /// setsockopt(2) of one Int32; true when it took.
    @discardableResult
    static func set(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) -> Bool {
        var value = value
        return setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    /// Asks for `bytes` of receive and send buffer (the kernel may give less); with `force`, also
    /// the FORCE forms, which root may use past the system caps (elsewhere they fail and the
    /// plain sizes stand).
    static func buffers(_ fd: Int32, bytes: Int32, receive: Bool = true, send: Bool = true, force: Bool = false) {
        if receive {
            set(fd, SOL_SOCKET, SO_RCVBUF, bytes)
            if force { set(fd, SOL_SOCKET, SO_RCVBUFFORCE, bytes) }
        }
        if send {
            set(fd, SOL_SOCKET, SO_SNDBUF, bytes)
            if force { set(fd, SOL_SOCKET, SO_SNDBUFFORCE, bytes) }
        }
    }
}
