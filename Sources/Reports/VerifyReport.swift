public import Results

/// `verify.json` (`"schema": "tunnelprobe.verify/1"`): the run, then the fields of `VerifyResult`.
public typealias VerifyReport = ResultDocument<VerifyResult>

extension VerifyResult: ReportResult {
    public static let schemaName = "tunnelprobe.verify/1"
}

extension ResultDocument where Result == VerifyResult {
    public var summaryLine: String { result.summaryLine }
    public func markdown() -> String { result.markdown(run: run) }
    public func htmlSection() -> String { result.htmlSection() }
}
