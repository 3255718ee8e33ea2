import Foundation
import Results

extension Proportion {
    /// "1.2 % [0.8, 1.9]": the ratio and its Wilson 95 % interval in percent, each through `format`;
    /// nil when nothing was measured.
    func percentWithInterval(_ format: (Double) -> String) -> String? {
        guard let ratio, let ciLow, let ciHigh else { return nil }
        return "\(format(ratio * 100)) % [\(format(ciLow * 100)), \(format(ciHigh * 100))]"
    }
}

extension Percentiles {
    /// The figures at `keys`, each through `format`, joined by " / "; "-" for one nobody measured.
    func figures(_ keys: [KeyPath<Percentiles, Double?>], _ format: (Double) -> String) -> String {
        keys.map { self[keyPath: $0].map(format) ?? "-" }.joined(separator: " / ")
    }

    static var p50p90p99: [KeyPath<Percentiles, Double?>] { [\.p50, \.p90, \.p99] }
}
