import Base
import Fates
import Foundation
import Testing

/// fates/1 `direction` is Base's `Direction` for a one-way stream or `roundTrip`: files written before
/// read the same, and a file written now has the same bytes.
@Suite struct FateStreamDirectionTests {
    /// A fates file as `path --export-fates` and `trace --export-fates` wrote it, keys sorted.
    static let file = #"{"schema":"tunnelprobe.fates\/1","source":{"description":"test","kind":"path"},"streams":["#
        + #"{"direction":"up","packets":[{"delayMs":10,"delivered":true,"sentMs":0,"size":60}],"resolver":"192.0.2.1:53"},"#
        + #"{"direction":"down","packets":[{"delivered":false,"sentMs":0,"size":200}],"resolver":"192.0.2.1:53"},"#
        + #"{"direction":"roundTrip","packets":[{"delayMs":20,"delivered":true,"sentMs":0,"size":60}],"resolver":"192.0.2.2:53"}]}"#

    @Test func oldFilesDecodeAndEncodeToTheSameBytes() throws {
        let trace = try FateTrace.decode(Data(Self.file.utf8))
        #expect(trace.streams.map(\.direction) == [.oneWay(.up), .oneWay(.down), .roundTrip])
        #expect(trace.streams.map(\.direction) == [.up, .down, .roundTrip])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let written = String(decoding: try encoder.encode(trace), as: UTF8.self)
        #expect(written == Self.file)
    }

    @Test func rawStringsAreTheSchemasWords() {
        #expect(FateStream.Direction.allCases.map(\.rawValue) == ["up", "down", "roundTrip"])
        for d in FateStream.Direction.allCases { #expect(FateStream.Direction(rawValue: d.rawValue) == d) }
        #expect(FateStream.Direction(rawValue: "roundtrip") == nil && FateStream.Direction(rawValue: "oneWay") == nil)
    }

    /// A direction fates/1 does not have is refused with the message the file always got.
    @Test func anUnknownDirectionNamesItsPlace() {
        let bad = Self.file.replacingOccurrences(of: #""direction":"down""#, with: #""direction":"sideways""#)
        do {
            _ = try FateTrace.decode(Data(bad.utf8))
            Issue.record("a stream going sideways was read")
        } catch {
            #expect(error.description == "<fates>: not JSON: Cannot initialize Direction from invalid String value sideways at streams[1].direction")
        }
    }
}
