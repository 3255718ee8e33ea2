public import Results
/// A result a report document can carry, with the schema its document is written under. The
/// conformances live in this module: the measuring modules know nothing of documents.
public protocol ReportResult: Codable, Sendable {
    /// `tunnelprobe.<kind>/<version>`; bump the version with any change to the result's JSON.
    static var schemaName: String { get }
}

/// A report document: `schema` and `run`, then the result's own fields at the top level of the same
/// JSON object (so a document reads as one flat object, as every schema of this project has). Reading
/// `document.x` reads the result's `x`.
@dynamicMemberLookup
public struct ResultDocument<Result: ReportResult>: Codable, Sendable {
    public var schema: String
    public var run: RunInfo
    public var result: Result

    public init(_ result: Result, run: RunInfo) {
        self.schema = Result.schemaName
        self.run = run
        self.result = result
    }

    public subscript<T>(dynamicMember path: KeyPath<Result, T>) -> T { result[keyPath: path] }

    public subscript<T>(dynamicMember path: WritableKeyPath<Result, T>) -> T {
        get { result[keyPath: path] }
        set { result[keyPath: path] = newValue }
    }

    private enum CodingKeys: String, CodingKey { case schema, run }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schema = try c.decode(String.self, forKey: .schema)
        run = try c.decode(RunInfo.self, forKey: .run)
        result = try Result(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try result.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(run, forKey: .run)
    }
}

extension ResultDocument: Equatable where Result: Equatable {}
extension ResultDocument: Hashable where Result: Hashable {}
