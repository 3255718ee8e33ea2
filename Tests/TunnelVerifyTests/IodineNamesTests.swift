import Testing
@testable import TunnelVerify

/// iodine's names and the hint for a QNAME-minimising resolver (the figures are those of the lab
/// capture behind `IodineNames`: `-M 74` for t.lab.test gave names with one data label).
struct IodineNamesTests {
    @Test func theDefaultLimitSpreadsDataOverSeveralLabels() {
        let names = IodineNames(domain: "t.lab.test", arguments: [])
        #expect(names.hostnameLimit == 255)
        #expect(names.spansSeveralLabels)
        #expect(names.oneLabelLimit == 74)
    }

    @Test func theLimitIsReadInBothSpellingsAndClampedAsIodineDoes() {
        #expect(IodineNames(domain: "t.lab.test", arguments: ["-M", "74"]).hostnameLimit == 74)
        #expect(IodineNames(domain: "t.lab.test", arguments: ["-T", "CNAME", "-M74"]).hostnameLimit == 74)
        #expect(IodineNames(domain: "t.lab.test", arguments: ["-M", "9999"]).hostnameLimit == 255)
        #expect(IodineNames(domain: "t.lab.test", arguments: ["-M", "3"]).hostnameLimit == 10)
        #expect(IodineNames(domain: "t.lab.test", arguments: ["-M"]).hostnameLimit == 255)
    }

    @Test func oneLabelNamesNeedNoHint() {
        let names = IodineNames(domain: "t.lab.test", arguments: ["-M", "74"])
        #expect(!names.spansSeveralLabels)
        #expect(names.dataStallHint(log: "Using DNS type CNAME queries\n") == nil)
        // One more character still fits one label (57 data characters lose one to the dot budget).
        #expect(!IodineNames(domain: "t.lab.test", arguments: ["-M", "75"]).spansSeveralLabels)
        #expect(IodineNames(domain: "t.lab.test", arguments: ["-M", "76"]).spansSeveralLabels)
    }

    @Test func aFallbackToCNAMEIsNamedAsTheSignOfMinimisation() throws {
        let log = """
            Autodetecting DNS query type (use -T to override)................
            Using DNS type CNAME queries
            Connection setup complete, transmitting data.
            """
        #expect(IodineNames.detectedType(log: log) == "CNAME")
        let hint = try #require(IodineNames(domain: "t.lab.test", arguments: []).dataStallHint(log: log))
        #expect(hint.contains("looks QNAME-minimising") && hint.contains("-M 74"))
    }

    @Test func withoutDetectionTheHintIsAConditional() throws {
        #expect(IodineNames.detectedType(log: "Using DNS type NULL queries\n") == nil)
        let hint = try #require(IodineNames(domain: "t.lab.test", arguments: ["-T", "NULL"]).dataStallHint(log: "Using DNS type NULL queries\n"))
        #expect(hint.hasPrefix("if the resolver minimises QNAMEs"))
    }
}
