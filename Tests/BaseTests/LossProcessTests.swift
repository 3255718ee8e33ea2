import Base
import Foundation
import Testing

/// The one text form of a loss process (`simulate --model`'s loss part, the relay's `--up-ge`): every
/// error the parser has, and each model read back from the text it writes.
@Suite struct LossProcessTests {
    @Test(arguments: [
        ("bernoulli:p=0.05", LossProcess.bernoulli(0.05)),
        ("BERNOULLI:p=0", .bernoulli(0)),
        ("bernoulli:p=1", .bernoulli(1)),
        ("ge:p=0.01,r=0.3", .gilbertElliott(.init(p: 0.01, r: 0.3))),
        ("ge:p=0.01,r=0.3,h=0.2,k=0.99", .gilbertElliott(.init(p: 0.01, r: 0.3, h: 0.2, k: 0.99))),
        ("ge:r=0.25,p=0,h=1", .gilbertElliott(.init(p: 0, r: 0.25, h: 1))),
    ])
    func readsEachModel(text: String, expected: LossProcess) throws {
        let process = try LossProcess(text: text)
        #expect(process == expected)
        // The text it writes reads back to the same process.
        #expect(try LossProcess(text: process.description) == process)
    }

    @Test func writesTheTextFormReportsHaveAlwaysCarried() throws {
        #expect(LossProcess.bernoulli(0.05).description == "bernoulli:p=0.05")
        #expect(LossProcess.gilbertElliott(.init(p: 0.01, r: 0.3)).description == "ge:p=0.01,r=0.3,h=0.0")
        #expect(LossProcess.gilbertElliott(.init(p: 0.01, r: 0.3, h: 0.2, k: 0.99)).description == "ge:p=0.01,r=0.3,h=0.2,k=0.99")
        #expect(LossProcess.bernoulli(0.2).kind == .bernoulli && LossProcess.gilbertElliott(.init(p: 0.1, r: 0.1)).kind == .ge)
    }

    @Test func meanLossIsPOrTheChainsStationaryLoss() {
        #expect(LossProcess.bernoulli(0.05).meanLoss == 0.05)
        #expect(LossProcess.gilbertElliott(.init(p: 0.01, r: 0.25, h: 0.5)).meanLoss == 0.01 / 0.26 * 0.5)
    }

    /// Every message the parser can give, word for word (the commands print them after their flag).
    @Test(arguments: [
        ("gauss:p=0.1", "unknown model (bernoulli:p=..., or ge:p=...,r=...,h=...)"),
        ("", "unknown model (bernoulli:p=..., or ge:p=...,r=...,h=...)"),
        (":p=0.1", "unknown model (bernoulli:p=..., or ge:p=...,r=...,h=...)"),
        ("bernoulli", "p= is required"),
        ("bernoulli:", "p= is required"),
        ("bernoulli:p=1.5", "p must be in [0, 1], got 1.5"),
        ("bernoulli:p=-0.1", "p must be in [0, 1], got -0.1"),
        ("bernoulli:p", "\"p\" is not key=number"),
        ("bernoulli:p=0.1,", "\"\" is not key=number"),
        ("bernoulli:p=0.1,r=0.2", "\"r=0.2\" is not one of p="),
        ("bernoulli:p=0.1,p=0.2", "p given twice"),
        ("bernoulli:p=x", "\"p=x\": x is not a number"),
        ("bernoulli:p=inf", "\"p=inf\": inf is not a number"),
        ("ge:p=0.1", "needs p= and r= (e.g. p=0.01,r=0.3)"),
        ("ge:p=0.1,h=0.2", "needs p= and r= (e.g. p=0.01,r=0.3)"),
        ("ge:p=2,r=0.3", "p must be in [0, 1], got 2.0"),
        ("ge:p=0.1,r=-0.1,h=0", "r must be in [0, 1], got -0.1"),
        ("ge:p=0.1,r=0.3,h=2", "h must be in [0, 1], got 2.0"),
        ("ge:p=0.1,r=0.3,k=1.1", "k must be in [0, 1], got 1.1"),
        ("ge:p=0,r=0", "p and r are both 0: the chain never moves"),
        ("ge:p=0.1,r=0.3,delay=5", "\"delay=5\" is not one of p=, r=, h=, k="),
    ])
    func refusesWithItsReason(text: String, reason: String) {
        #expect(throws: TextFormError(reason)) { try LossProcess(text: text) }
    }

    /// The caller's own keys (the simulator's delay= and rate=) pass through for it to check.
    @Test func extraKeysPassThroughUnchecked() throws {
        let (kind, fields) = try LossProcess.fields("bernoulli:p=0.1,delay=-5", extraKeys: ["delay", "rate"])
        #expect(kind == .bernoulli && fields == ["p": 0.1, "delay": -5])
        #expect(try LossProcess(kind, fields: fields) == .bernoulli(0.1))
        #expect(throws: TextFormError("\"size=3\" is not one of p=, delay=, rate=")) {
            try LossProcess.fields("bernoulli:size=3", extraKeys: ["delay", "rate"])
        }
    }
}

/// `Direction`'s raw strings are what fates files, impair's log and rank's flag have always carried.
@Suite struct DirectionTests {
    @Test func encodesAndDecodesTheRawStrings() throws {
        let data = try JSONEncoder().encode([Direction.up, .down])
        #expect(String(decoding: data, as: UTF8.self) == #"["up","down"]"#)
        #expect(try JSONDecoder().decode([Direction].self, from: Data(#"["down","up"]"#.utf8)) == [.down, .up])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Direction].self, from: Data(#"["roundTrip"]"#.utf8)) }
        #expect(Direction.up.reversed == .down && Direction.down.reversed == .up)
    }
}
