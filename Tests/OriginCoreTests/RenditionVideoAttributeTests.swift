import HLSPlaylist
import MediaProbe
import TestSupport
import Testing

@testable import HLSPackaging
@testable import LiveTimeline

/// HDCP-LEVEL and ALLOWED-CPC per rendition over the channel's, and VIDEO-RANGE from the probed transfer, on the
/// variants and the I-frame streams of the multivariant playlist (docs/hls-playlist.md, video attributes).
@Suite("Video attributes per rendition in the multivariant playlist", .offThePool)
struct RenditionVideoAttributeTests {
    static let main = try! AllowedCPC("com.apple.streamingkeydelivery:AppleMain/Main")
    static let baseline = try! AllowedCPC("com.apple.streamingkeydelivery:AppleBaseline")

    /// The demuxed channel (hi and lo video, en and fr audio, lo-vtt subtitles) with TYPE-0 and AppleBaseline on the
    /// channel, TYPE-1 and AppleMain/Main on `hi` alone.
    static func state() throws -> ChannelState {
        try MultivariantRenditionTests.demuxState(hint: MultivariantRenditionTests.ffmpegHint) {
            $0.hdcpLevel = .type0
            $0.allowedCPC = baseline
            $0.renditions = [RenditionConfiguration(name: "hi", hdcpLevel: .type1, allowedCPC: main)]
        }
    }

    @Test func aRenditionsHDCPLevelAndAllowedCPCWinOverTheChannelsOnItsVariantsAndIFrameStream() throws {
        let playlist = try #require(Self.state().multivariant())
        let variants = playlist.variants.filter { $0.uri.hasPrefix("hi/") || $0.uri.hasPrefix("lo/") }
        #expect(!variants.isEmpty)
        for variant in variants {
            let hi = variant.uri.hasPrefix("hi/")
            #expect(variant.hdcpLevel == (hi ? .type1 : .type0), "\(variant.uri)")
            #expect(variant.allowedCPC == (hi ? Self.main : Self.baseline), "\(variant.uri)")
        }
        #expect(playlist.iFrameStreams.map(\.uri) == ["hi/iframes.m3u8", "lo/iframes.m3u8"])
        #expect(playlist.iFrameStreams.map(\.hdcpLevel) == [.type1, .type0])
        #expect(playlist.iFrameStreams.map(\.allowedCPC) == [Self.main, Self.baseline])
        let text = playlist.render()
        #expect(text.contains("#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=301000,"), "\(text)")
        #expect(text.contains("HDCP-LEVEL=TYPE-1,ALLOWED-CPC=\"com.apple.streamingkeydelivery:AppleMain/Main\""))
        #expect(playlist.validate().isEmpty)
    }

    @Test func theVariantAndItsIFrameStreamCarryTheSameVideoAttributes() throws {
        var state = try Self.state()
        let hi = try #require(state.index["hi"])
        state.renditions[hi].tracks[0].transferCharacteristics = 18  // HLG
        state.renditions[hi].tracks[0].supplementalCodec = "dvh1.08.04/db4h"
        let playlist = try #require(state.multivariant())
        let variant = try #require(playlist.variants.first { $0.uri == "hi/index.m3u8" })
        let iFrames = try #require(playlist.iFrameStreams.first { $0.uri == "hi/iframes.m3u8" })
        #expect(
            variant.videoAttributes
                == VideoAttributes(
                    supplementalCodecs: ["dvh1.08.04/db4h"], videoRange: .hlg, hdcpLevel: .type1,
                    allowedCPC: Self.main))
        #expect(iFrames.videoAttributes == variant.videoAttributes)
        // Audio-only members of the groups carry none.
        #expect(playlist.variants.allSatisfy { $0.uri.hasPrefix("hi/") || $0.uri.hasPrefix("lo/") })
    }
}
