import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("VIDEO-RANGE, SUPPLEMENTAL-CODECS, HDCP-LEVEL and ALLOWED-CPC", .offThePool)
struct VideoAttributeRenderingTests {
    @Test func variantAndIFrameStreamCarryTheVideoAttributes() throws {
        var variant = VariantStream(
            uri: "uhd/index.m3u8", bandwidth: 16_000_000, codecs: ["hvc1.2.4.L153.B0", "mp4a.40.2"],
            resolution: Resolution(width: 3840, height: 2160), frameRate: 30000.0 / 1001)
        variant.supplementalCodecs = ["dvh1.08.07/db1p"]
        variant.videoRange = .pq
        variant.hdcpLevel = .type1
        variant.allowedCPC = try AllowedCPC("com.apple.streamingkeydelivery:AppleMain/Main,urn:uuid:edef8ba9:L1")
        #expect(
            variant.renderedTag
                == "#EXT-X-STREAM-INF:BANDWIDTH=16000000,CODECS=\"hvc1.2.4.L153.B0,mp4a.40.2\","
                + "SUPPLEMENTAL-CODECS=\"dvh1.08.07/db1p\",RESOLUTION=3840x2160,VIDEO-RANGE=PQ,HDCP-LEVEL=TYPE-1,"
                + "ALLOWED-CPC=\"com.apple.streamingkeydelivery:AppleMain/Main,urn:uuid:edef8ba9:L1\","
                + "FRAME-RATE=29.970")
        var iFrames = IFrameStream(uri: "uhd/iframes.m3u8", bandwidth: 900_000, codecs: ["hvc1.2.4.L153.B0"])
        iFrames.videoRange = .hlg
        iFrames.hdcpLevel = HDCPLevel.none
        #expect(
            iFrames.renderedTag
                == "#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=900000,CODECS=\"hvc1.2.4.L153.B0\",VIDEO-RANGE=HLG,"
                + "HDCP-LEVEL=NONE,URI=\"uhd/iframes.m3u8\"")
    }

    @Test func transferCharacteristicsMapToRanges() {
        #expect(HLSVideoRange(transferCharacteristics: 16) == .pq)
        #expect(HLSVideoRange(transferCharacteristics: 18) == .hlg)
        for sdr: UInt8 in [0, 1, 2, 6, 13, 14, 15, 255] {
            #expect(HLSVideoRange(transferCharacteristics: sdr) == .sdr)
        }
    }

    @Test func oneVideoAttributesValueRendersAlikeOnTheVariantAndItsIFrameStream() throws {
        let attributes = VideoAttributes(
            supplementalCodecs: ["dvh1.08.04/db4h"], videoRange: .hlg, hdcpLevel: .type0,
            allowedCPC: try AllowedCPC("com.apple.streamingkeydelivery:AppleMain"))
        var variant = VariantStream(uri: "hd/index.m3u8", bandwidth: 5_000_000, codecs: ["hvc1.2.4.L123.B0"])
        variant.videoAttributes = attributes
        var iFrames = IFrameStream(uri: "hd/iframes.m3u8", bandwidth: 500_000, codecs: ["hvc1.2.4.L123.B0"])
        iFrames.videoAttributes = attributes
        let shared =
            ",SUPPLEMENTAL-CODECS=\"dvh1.08.04/db4h\",VIDEO-RANGE=HLG,HDCP-LEVEL=TYPE-0,"
            + "ALLOWED-CPC=\"com.apple.streamingkeydelivery:AppleMain\""
        #expect(variant.renderedTag == "#EXT-X-STREAM-INF:BANDWIDTH=5000000,CODECS=\"hvc1.2.4.L123.B0\"" + shared)
        #expect(
            iFrames.renderedTag
                == "#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=500000,CODECS=\"hvc1.2.4.L123.B0\"" + shared
                + ",URI=\"hd/iframes.m3u8\"")
        #expect(variant.videoAttributes == attributes && iFrames.videoAttributes == attributes)
    }

    @Test func theAttributesParseBackAndBadValuesAreNamed() throws {
        var variant = VariantStream(uri: "uhd/index.m3u8", bandwidth: 9_000_000, codecs: ["hvc1.2.4.L150.B0"])
        variant.supplementalCodecs = ["dvh1.08.07/db4h"]
        variant.videoRange = .hlg
        variant.hdcpLevel = .type0
        variant.allowedCPC = try AllowedCPC("com.apple.streamingkeydelivery:AppleMain")
        var iFrames = IFrameStream(uri: "uhd/iframes.m3u8", bandwidth: 500_000, codecs: ["hvc1.2.4.L150.B0"])
        iFrames.videoRange = .pq
        var playlist = MultivariantPlaylist(variants: [variant])
        playlist.iFrameStreams = [iFrames]
        let parsed = try MultivariantPlaylist.parse(playlist.render())
        #expect(parsed.variants == [variant])
        #expect(parsed.iFrameStreams == [iFrames])
        for (line, attribute) in [("ALLOWED-CPC=\"x\"", "ALLOWED-CPC")] {
            let text = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,\(line)\na/index.m3u8\n"
            #expect(throws: PlaylistParseError.self) { try MultivariantPlaylist.parse(text) }
            do { _ = try MultivariantPlaylist.parse(text) } catch {
                #expect(error.message.contains(attribute), "\(error)")
            }
        }
    }

    @Test func unknownVideoRangeAndHDCPLevelOfANewerPackagerParseAsUnset() throws {
        let text = """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=1,VIDEO-RANGE=HDR,HDCP-LEVEL=TYPE-2
            a/index.m3u8
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,VIDEO-RANGE=XYZ,URI="a/iframes.m3u8"

            """
        let parsed = try MultivariantPlaylist.parse(text)
        #expect(parsed.variants.count == 1)
        #expect(parsed.variants[0].videoRange == nil)
        #expect(parsed.variants[0].hdcpLevel == nil)
        #expect(parsed.iFrameStreams[0].videoRange == nil)
    }

    @Test func unsetAttributesRenderNothing() {
        let variant = VariantStream(uri: "a/index.m3u8", bandwidth: 1, codecs: ["mp4a.40.2"])
        #expect(variant.renderedTag == "#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"mp4a.40.2\"")
    }

    @Test(arguments: [
        ("", "ALLOWED-CPC is empty"),
        (
            "com.apple.streamingkeydelivery",
            "ALLOWED-CPC entry 'com.apple.streamingkeydelivery' has no KEYFORMAT:LABEL colon"
        ),
        (":Main", "ALLOWED-CPC entry ':Main' has an empty or invalid KEYFORMAT"),
        ("key format:Main", "ALLOWED-CPC entry 'key format:Main' has an empty or invalid KEYFORMAT"),
        ("com.x:Main/", "ALLOWED-CPC entry 'com.x:Main/': CPC labels are letters, digits and '-', '/'-separated"),
        ("com.x:Main,", "ALLOWED-CPC entry '' has no KEYFORMAT:LABEL colon"),
        ("com.x:Ma\"in", "ALLOWED-CPC entry 'com.x:Ma\"in': CPC labels are letters, digits and '-', '/'-separated"),
    ])
    func malformedAllowedCPCIsRefusedWithTheReason(value: String, message: String) {
        #expect(throws: AllowedCPCError(message)) { try AllowedCPC(value) }
    }

    @Test func hyphenatedCPCLabelOfTheRFCExampleIsAccepted() throws {
        let parsed = try AllowedCPC("com.example.drm1:SMART-TV/PC,com.apple.streamingkeydelivery:AppleMain")
        #expect(parsed.entries[0].labels == ["SMART-TV", "PC"])
        #expect(parsed.entries[1].labels == ["AppleMain"])
        let text = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,ALLOWED-CPC=\"com.example.drm1:SMART-TV/PC\"\na/index.m3u8\n"
        let variant = try #require(try MultivariantPlaylist.parse(text).variants.first)
        #expect(variant.allowedCPC?.rendered == "com.example.drm1:SMART-TV/PC")
    }

    @Test func allowedCPCRoundTripsAndIsBounded() throws {
        let value = "com.apple.streamingkeydelivery:AppleMain/Main,com.microsoft.playready:SL2000/SL3000"
        let parsed = try AllowedCPC(value)
        #expect(parsed.entries.count == 2)
        #expect(parsed.entries[1].labels == ["SL2000", "SL3000"])
        #expect(parsed.rendered == value)
        let long = (0..<200).map { "k\($0):L" }.joined(separator: ",")
        #expect(throws: AllowedCPCError.self) { try AllowedCPC(long) }
    }
}
