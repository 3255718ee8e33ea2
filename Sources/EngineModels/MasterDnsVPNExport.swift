public import Results
/// The two texts both MasterDnsVPN editions read: `client_resolvers.txt` (one resolver per line:
/// `ip`, `ip:port`, `[v6]:port`; `#` starts a comment; client_resolvers.simple in the Go tree,
/// client_resolvers.simple.txt and client.py in the Python one) and the MTU keys of
/// `client_config.toml` (TOML `KEY = value`, keys MIN/MAX_UPLOAD_MTU and MIN/MAX_DOWNLOAD_MTU in
/// client_config.toml.simple of both editions). MIN = MAX pins the client's search to the
/// exported value: both editions test the maximum first and accept it when it passes.
public enum MasterDnsVPNExport {
    /// `client_resolvers.txt` and the config fragment for `synced`.
    public static func files(_ synced: SyncedFigures, edition: String, encryption: EncryptionMethod,
                             baseEncodeData: Bool) -> [ExportFile] {
        [resolvers(synced.usable.map(\.resolver), edition: edition), config(synced, edition: edition,
                                                                            encryption: encryption, baseEncodeData: baseEncodeData)]
    }

    /// `client_resolvers.txt` listing each usable resolver once, in order.
    public static func resolvers(_ list: [String], edition: String) -> ExportFile {
        var seen = Set<String>()
        var lines = ["# \(edition) resolvers found usable by tunnelprobe"]
        for text in list {
            let address = ResolverAddress(text)
            let line = address?.udpOnlyNote(engine: "MasterDnsVPN") ?? address?.masterDnsVPNLine ?? text.filter { !$0.isWhitespace }
            if !line.isEmpty, seen.insert(line).inserted { lines.append(line) }
        }
        return ExportFile(name: "client_resolvers.txt", text: lines.joined(separator: "\n") + "\n")
    }

    /// The client_config.toml lines that pin the MTU search to the synced values, or a comment
    /// saying there are none.
    public static func config(_ synced: SyncedFigures, edition: String, encryption: EncryptionMethod,
                              baseEncodeData: Bool) -> ExportFile {
        var lines = ["# \(edition) MTUs measured by tunnelprobe over \(synced.usable.count) usable pair(s);",
                     "# valid only with DATA_ENCRYPTION_METHOD = \(encryption.rawValue) and BASE_ENCODE_DATA = \(baseEncodeData)"]
        if let up = synced.upload, let down = synced.download {
            lines += ["MIN_UPLOAD_MTU = \(up)", "MAX_UPLOAD_MTU = \(up)", "MIN_DOWNLOAD_MTU = \(down)", "MAX_DOWNLOAD_MTU = \(down)"]
        } else {
            lines.append("# no usable resolver: nothing to set")
        }
        return ExportFile(name: "client_config.toml", text: lines.joined(separator: "\n") + "\n")
    }
}
