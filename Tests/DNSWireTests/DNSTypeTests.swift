import DNSWire
import Testing

@Suite("DNS code points")
struct DNSTypeTests {
    @Test func typeNames() {
        #expect(DNSType(name: "TXT") == .txt)
        #expect(DNSType(name: "txt") == .txt)
        #expect(DNSType(name: "aaaa") == .aaaa)
        #expect(DNSType(name: "TYPE65") == DNSType(rawValue: 65))
        #expect(DNSType(name: "type65535") == DNSType(rawValue: 65535))
        #expect(DNSType(name: "TYPE65536") == nil)
        #expect(DNSType(name: "TYPE") == nil)
        #expect(DNSType(name: "TYPE-1") == nil)
        #expect(DNSType(name: "BOGUS") == nil)
        #expect(DNSType.txt.description == "TXT")
        #expect(DNSType(rawValue: 65).description == "TYPE65")
        #expect(DNSType.null.rawValue == 10 && DNSType.srv.rawValue == 33 && DNSType.opt.rawValue == 41)
        let literal: DNSType = 16
        #expect(literal == .txt)
    }

    @Test func everyMnemonicRoundTrips() {
        for type in [DNSType.a, .ns, .cname, .soa, .null, .ptr, .mx, .txt, .aaaa, .srv, .opt, .any] {
            #expect(DNSType(name: type.description) == type)
        }
    }

    @Test func rcodesClassesOpcodes() {
        #expect(DNSRcode.noError.description == "NOERROR")
        #expect(DNSRcode.servFail.description == "SERVFAIL")
        #expect(DNSRcode.nxDomain.description == "NXDOMAIN")
        #expect(DNSRcode.badVers.rawValue == 16)
        #expect(DNSRcode(rawValue: 23).description == "RCODE23")
        #expect(DNSClass.in.rawValue == 1 && DNSClass.chaos.rawValue == 3 && DNSClass.any.rawValue == 255)
        #expect(DNSClass(rawValue: 7).description == "CLASS7")
        #expect(DNSOpcode.query.rawValue == 0)
        #expect(DNSOpcode(rawValue: 9).description == "OPCODE9")
    }

    @Test func errorsCompareByCode() {
        let a = DNSWireError(.truncated, at: 3, "one")
        let b = DNSWireError(.truncated, at: 9, "two")
        #expect(a == b)
        #expect(a != DNSWireError(.pointerLoop, at: 3, "one"))
        #expect(a.description == "truncated at offset 3: one")
        #expect(DNSWireError(.valueOutOfRange, "x").offset == -1)
    }
}
