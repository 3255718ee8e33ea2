public import Results

extension ScanServerProbing {
    /// Lines for scan.md.
    public func markdown() -> [String] {
        var out = ["## Probed against your MasterDnsVPN server", ""]
        out.append("- The probes were MasterDnsVPN's own MTU-test requests (\(edition == "go" ? "Go" : edition) edition, encryption method \(encryptionMethod) \(encryptionName)\(baseEncodeData ? ", base64 replies" : "")), sent to your server through each resolver: `up bytes` and `down bytes` below are MIN/MAX_UPLOAD_MTU and MIN/MAX_DOWNLOAD_MTU as the engine's client finds them.")
        out.append("- **Not authenticated:** \(authentication).")
        out.append("- On the wire: \(wireExposure).")
        out.append("- The engine model from the sizes that arrived gives the same figures for \(modelCheck.agreeing) of \(modelCheck.pairs) usable pair(s)" + (modelCheck.disagreeing.isEmpty ? "." : ":"))
        for line in modelCheck.disagreeing { out.append("  - \(line)") }
        out.append("")
        return out
    }
}
