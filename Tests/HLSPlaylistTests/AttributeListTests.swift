import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("Attribute lists", .offThePool)
struct AttributeListTests {
    @Test("splits names and raw values in order")
    func parse() throws {
        let attributes = try AttributeList.parse(
            "BANDWIDTH=1280000,CODECS=\"avc1.4d401f,mp4a.40.2\",RESOLUTION=1280x720,X-Y=0xAB,Z=-1.5,E=\"\"")
        #expect(attributes.map(\.name) == ["BANDWIDTH", "CODECS", "RESOLUTION", "X-Y", "Z", "E"])
        #expect(
            attributes.map(\.value) == ["1280000", "\"avc1.4d401f,mp4a.40.2\"", "1280x720", "0xAB", "-1.5", "\"\""])
    }

    @Test(
        "refuses malformed lists",
        arguments: [
            ("", "empty attribute list"),
            ("A=1,A=2", "attribute A appears twice"),
            ("A =1", "whitespace after attribute name A"),
            ("A= 1", "invalid character in value of A (whitespace or quote)"),
            (" A=1", "whitespace in attribute list"),
            ("A=\"x", "unterminated quoted string in A"),
            ("A=\"x\"\"", "expected ',' after the value of A"),
            ("A=x\"y\"", "invalid character in value of A (whitespace or quote)"),
            ("A=", "attribute A has an empty value"),
            ("A=,B=1", "attribute A has an empty value"),
            ("A=1,", "attribute list ends with ','"),
            ("A=1,,B=2", "missing attribute name at offset 4"),
            ("A", "attribute A has no '=' or an invalid name"),
            ("a=1", "missing attribute name at offset 0"),
            ("A_B=1", "attribute A has no '=' or an invalid name"),
        ])
    func malformed(text: String, message: String) {
        #expect(throws: PlaylistParseError(line: 0, message: message)) { try AttributeList.parse(text) }
    }

    @Test("classifies values")
    func values() {
        #expect(AttributeList.value("\"a,b\"") == .quotedString("a,b"))
        #expect(AttributeList.value("0xFC30") == .hexadecimal([0xFC, 0x30]))
        #expect(AttributeList.value("0Xf") == .hexadecimal([0x0F]))
        #expect(AttributeList.value("0x") == .enumerated("0x"))
        #expect(AttributeList.value("0xZZ") == .enumerated("0xZZ"))
        #expect(AttributeList.value("12") == .decimal(12))
        #expect(AttributeList.value("-0.5") == .decimal(-0.5))
        #expect(AttributeList.value("1.") == .decimal(1))
        #expect(AttributeList.value(".5") == .enumerated(".5"))
        #expect(AttributeList.value("1e5") == .enumerated("1e5"))
        #expect(AttributeList.value("inf") == .enumerated("inf"))
        #expect(AttributeList.value("YES") == .enumerated("YES"))
        #expect(AttributeList.value("1920x1080") == .enumerated("1920x1080"))
    }

    @Test("renders values and checks quoted content")
    func render() {
        #expect(AttributeList.render(.quotedString("a b")) == "\"a b\"")
        #expect(AttributeList.render(.hexadecimal([0xAB, 0x01])) == "0xAB01")
        #expect(AttributeList.render(.decimal(30.5)) == "30.5")
        #expect(AttributeList.render(.enumerated("YES")) == "YES")
        #expect(AttributeList.isValidQuotedContent("fine, really"))
        #expect(!AttributeList.isValidQuotedContent("say \"hi\""))
        #expect(!AttributeList.isValidQuotedContent("a\r\nb"))
        #expect(AttributeList.isValidName("X-AD-ID2"))
        #expect(!AttributeList.isValidName("X_AD"))
        #expect(AttributeList.unquoted("\"\"") == "")
        #expect(AttributeList.unquoted("\"") == nil)
        #expect(AttributeList.unquoted("\"\u{301}a\"") == "\u{301}a")
    }
}
