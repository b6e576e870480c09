import Foundation
@testable import HLSPackaging
import HLSPlaylist
import MediaProbe
import TestSupport
import Testing

@testable import LiveTimeline

/// `ChannelState.multivariant()` on the rendition layout: byte-exact text from hand-set statistics, every render
/// valid under rule 35.
@Suite("Multivariant rendering with alternate renditions", .offThePool)
struct MultivariantRenditionTests {
    /// The renditions of the issue's ffmpeg push with subtitles on `lo`, with the design's measured rates
    /// (peak, average).
    static func demuxState(
        hint: MultivariantHint? = nil, configure: (inout ChannelConfiguration) -> Void = { _ in }
    ) throws -> ChannelState {
        var configuration = ChannelConfiguration(name: "demux")
        configure(&configuration)
        var state = ChannelState(configuration: configuration, firstMSN: 0)
        let video = { (codec: String, width: Int, height: Int) in
            [
                TrackInfo(
                    kind: .video, codec: codec, width: width, height: height, frameRate: 30, trackID: 256,
                    timescale: 90000)
            ]
        }
        let mono = [
            TrackInfo(
                kind: .audio, codec: "mp4a.40.2", sampleRate: 48000, channelCount: 1, trackID: 257, timescale: 90000)
        ]
        let renditions: [(String, [TrackInfo], Int, Int)] = [
            ("hi", video("avc1.42c01e", 640, 360), 2_115_000, 2_050_000),
            ("lo", video("avc1.42c00d", 320, 180), 752_000, 700_000),
            ("en", mono, 80_000, 78_000),
            ("fr", mono, 80_000, 78_000),
            ("lo-vtt", [TrackInfo(kind: .subtitles, codec: "wvtt", trackID: 1, timescale: 90000)], 400, 300),
        ]
        for (name, tracks, peak, average) in renditions {
            if state.index[name] == nil { state.addRendition(name) }
            let position = try #require(state.index[name])
            state.renditions[position].tracks = tracks
            state.renditions[position].statistics.peakBitrate = peak
            // averageBitrate = totalBytes x 8 x 1000 / totalMilliseconds
            state.renditions[position].statistics.totalBytes = Int64(average)
            state.renditions[position].statistics.totalMilliseconds = 8000
            if name == "lo-vtt" { state.renditions[position].role = .subtitles(parent: "lo") }
            // The I-frames alone of the video renditions (peak, average over 8 s): EXT-X-I-FRAME-STREAM-INF.
            if let (peak, average) = ["hi": (301_000, 262_000), "lo": (96_000, 84_000)][name] {
                state.renditions[position].statistics.iFramePeakBitrate = peak
                state.renditions[position].statistics.iFrameTotalBytes = Int64(average)
                state.renditions[position].statistics.iFrameTotalMilliseconds = 8000
            }
        }
        if let hint { _ = state.adoptMultivariantHint(hint) }
        return state
    }

    static func render(_ state: ChannelState) throws -> String {
        let playlist = try #require(state.multivariant())
        #expect(playlist.validate().isEmpty, "\(playlist.validate())")
        return playlist.render()
    }

    static let ffmpegHint = try! MultivariantHint.read(Array(MultivariantHintTests.ffmpeg51Master.utf8))

    static let demuxedVariants = """
        #EXTM3U
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="1",URI="en/index.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="Français",LANGUAGE="fr",DEFAULT=NO,AUTOSELECT=YES,CHANNELS="1",URI="fr/index.m3u8"
        #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="lo-vtt",DEFAULT=NO,AUTOSELECT=YES,FORCED=NO,URI="lo-vtt/index.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=2195400,AVERAGE-BANDWIDTH=2128300,CODECS="avc1.42c01e,mp4a.40.2",RESOLUTION=640x360,FRAME-RATE=30.000,AUDIO="group_aud",SUBTITLES="subs",CLOSED-CAPTIONS=NONE
        hi/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=832400,AVERAGE-BANDWIDTH=778300,CODECS="avc1.42c00d,mp4a.40.2",RESOLUTION=320x180,FRAME-RATE=30.000,AUDIO="group_aud",SUBTITLES="subs",CLOSED-CAPTIONS=NONE
        lo/index.m3u8

        """

    /// The I-frame streams of `demuxed`, after every variant: the video renditions' own codecs, no AUDIO.
    static let demuxedIFrameStreams = """
        #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=301000,AVERAGE-BANDWIDTH=262000,CODECS="avc1.42c01e",RESOLUTION=640x360,URI="hi/iframes.m3u8"
        #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=96000,AVERAGE-BANDWIDTH=84000,CODECS="avc1.42c00d",RESOLUTION=320x180,URI="lo/iframes.m3u8"

        """

    static let demuxed = demuxedVariants + demuxedIFrameStreams

    @Test func testFfmpegDemuxedLayout() throws {
        #expect(try Self.render(Self.demuxState(hint: Self.ffmpegHint)) == Self.demuxed)
    }

    @Test func audioOnlyVariantComesLast() throws {
        let state = try Self.demuxState(hint: Self.ffmpegHint) { $0.audioOnlyVariant = true }
        #expect(
            try Self.render(state) == Self.demuxedVariants
                + "#EXT-X-STREAM-INF:BANDWIDTH=80000,AVERAGE-BANDWIDTH=78000,CODECS=\"mp4a.40.2\",AUDIO=\"group_aud\","
                + "CLOSED-CAPTIONS=NONE\nen/index.m3u8\n" + Self.demuxedIFrameStreams)
    }

    @Test func captionsFoundInVideoAreListedAndReferenced() throws {
        var state = try Self.demuxState(hint: Self.ffmpegHint)
        state.renditions[try #require(state.index["hi"])].closedCaptions = [.cea608(1), .cea708(service: 1)]
        let text = try Self.render(state)
        #expect(
            text.contains(
                """
                #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",DEFAULT=NO,AUTOSELECT=YES,INSTREAM-ID="CC1"
                #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="SERVICE1",DEFAULT=NO,AUTOSELECT=YES,INSTREAM-ID="SERVICE1"
                #EXT-X-STREAM-INF:
                """))
        #expect(text.hasPrefix("#EXTM3U\n#EXT-X-VERSION:7\n"))
        #expect(!text.contains("CLOSED-CAPTIONS=NONE"))
        #expect(text.components(separatedBy: "CLOSED-CAPTIONS=\"cc\"").count == 3)
    }

    @Test func probeOnlyLayoutStillPlaysWithSound() throws {
        let text = try Self.render(Self.demuxState())
        #expect(
            text.contains(
                "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"en\",DEFAULT=YES,AUTOSELECT=YES,CHANNELS=\"1\","
                    + "URI=\"en/index.m3u8\"\n"))
        #expect(text.contains("AUDIO=\"audio\",SUBTITLES=\"subs\",CLOSED-CAPTIONS=NONE\nhi/index.m3u8\n"))
        #expect(!text.contains("LANGUAGE"))
    }

    @Test func twoAudioCodecsRepeatEveryVideoVariantPerGroup() throws {
        var state = try Self.demuxState()
        state.addRendition("en51")
        let position = try #require(state.index["en51"])
        state.renditions[position].tracks = [
            TrackInfo(kind: .audio, codec: "ac-3", channelCount: 6, trackID: 257, timescale: 90000)
        ]
        state.renditions[position].statistics.peakBitrate = 384_000
        let playlist = try #require(state.multivariant())
        #expect(playlist.validate().isEmpty)
        #expect(playlist.variants.map(\.uri) == ["hi/index.m3u8", "lo/index.m3u8", "hi/index.m3u8", "lo/index.m3u8"])
        #expect(playlist.variants.map(\.audioGroup) == ["audio", "audio", "audio-ac3", "audio-ac3"])
        #expect(playlist.variants[2].codecs == ["avc1.42c01e", "ac-3"])
        #expect(playlist.variants[2].bandwidth == 2_115_000 + 384_000 + 400)
        #expect(playlist.renditions.first { $0.name == "en51" }?.channels == "6")
    }

    @Test func configurationWinsAndTheHintContradictionIsCounted() throws {
        var state = try Self.demuxState { configuration in
            configuration.renditions = [
                RenditionConfiguration(name: "en", audio: .init(group: "group_aud", language: "en", name: "Anglais"))
            ]
        }
        let contradictions = state.adoptMultivariantHint(Self.ffmpegHint)
        #expect(contradictions.count == 1)
        let status = try #require(state.status(name: "demux", nowMilliseconds: 0).multivariantHints)
        #expect(status.contradictions == 1)
        #expect(status.layoutNotes.count == 1)
        #expect(status.layoutNotes.first?.contains("hint for en") == true)
        let text = try Self.render(state)
        // No configured member is DEFAULT: the group's first member becomes it (players need one to start with).
        #expect(text.contains("NAME=\"Anglais\",LANGUAGE=\"en\",DEFAULT=YES"))
        #expect(text.contains("NAME=\"Français\",LANGUAGE=\"fr\",DEFAULT=NO"))
    }

    @Test func theJournaledHintRendersTheSamePlaylistAfterARestart() throws {
        let before = try Self.demuxState(hint: Self.ffmpegHint)
        let data = try JSONEncoder().encode(before.journalRecord(nowMilliseconds: 1))
        var after = ChannelState(configuration: ChannelConfiguration(name: "demux"), firstMSN: 32)
        after.restore(try JSONDecoder().decode(ChannelJournalRecord.self, from: data))
        // The renditions come back from the store with their tracks and rates (restoreFacts); set them alike here.
        for rendition in before.renditions {
            after.addRendition(rendition.name)
            let position = try #require(after.index[rendition.name])
            after.renditions[position].tracks = rendition.tracks
            after.renditions[position].statistics = rendition.statistics
            after.renditions[position].role = rendition.role
        }
        #expect(try Self.render(after) == Self.demuxed)
    }

    @Test func aJournalWithoutAHintStillLoads() throws {
        let older =
            #"{"version":1,"channel":"demux","msnReservedThrough":31,"renditions":{},"writtenAtMilliseconds":5}"#
        let record = try JSONDecoder().decode(ChannelJournalRecord.self, from: Data(older.utf8))
        #expect(record.multivariantHint == nil)
        #expect(record.msnReservedThrough == 31)
    }

    @Test func radioAndMuxedChannelsKeepOneVariantPerRendition() throws {
        var state = ChannelState(configuration: ChannelConfiguration(name: "radio"), firstMSN: 0)
        for name in ["en", "fr"] {
            state.addRendition(name)
            state.renditions[state.index[name]!].tracks = [
                TrackInfo(kind: .audio, codec: "mp4a.40.2", channelCount: 2, trackID: 257, timescale: 90000)
            ]
            state.renditions[state.index[name]!].statistics.peakBitrate = 96_000
        }
        #expect(
            try Self.render(state) == """
                #EXTM3U
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-STREAM-INF:BANDWIDTH=96000,AVERAGE-BANDWIDTH=1,CODECS="mp4a.40.2"
                en/index.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=96000,AVERAGE-BANDWIDTH=1,CODECS="mp4a.40.2"
                fr/index.m3u8

                """)
    }

    /// Origins of a redundancy group see one encoder's renditions arrive in different orders: the variants of
    /// renditions created by pushes are listed by name, configured ones first in their configured order.
    @Test func variantsAreInTheSameOrderWhicheverRenditionArrivedFirst() throws {
        func render(arrivals: [String], configured: [String] = []) throws -> [String] {
            var configuration = ChannelConfiguration(name: "pair")
            configuration.renditions = configured.map { RenditionConfiguration(name: $0) }
            var state = ChannelState(configuration: configuration, firstMSN: 0)
            for (position, name) in arrivals.enumerated() {
                state.addRendition(name)
                state.renditions[state.index[name]!].tracks = [
                    TrackInfo(
                        kind: .video, codec: "avc1.4d401e", width: 640, height: 360, trackID: 256, timescale: 90000)
                ]
                state.renditions[state.index[name]!].statistics.peakBitrate = 100_000 * (position + 1)
            }
            return try Self.render(state).split(separator: "\n").filter { $0.hasSuffix(".m3u8") }.map(String.init)
        }
        let expected = ["hi/index.m3u8", "lo/index.m3u8", "mid/index.m3u8"]
        #expect(try render(arrivals: ["lo", "mid", "hi"]) == expected)
        #expect(try render(arrivals: ["mid", "hi", "lo"]) == expected)
        #expect(
            try render(arrivals: ["lo", "mid", "hi"], configured: ["mid", "lo"])
                == ["mid/index.m3u8", "lo/index.m3u8", "hi/index.m3u8"])
    }

    @Test func muxedVideoReferencesTheSubtitleGroupWithItsOwnAudioCodec() throws {
        var state = ChannelState(configuration: ChannelConfiguration(name: "news"), firstMSN: 0)
        state.addRendition("360p")
        state.renditions[state.index["360p"]!].tracks = [
            TrackInfo(kind: .video, codec: "avc1.64001e", width: 640, height: 360, trackID: 256, timescale: 90000),
            TrackInfo(kind: .audio, codec: "mp4a.40.2", channelCount: 2, trackID: 257, timescale: 90000),
        ]
        state.renditions[state.index["360p"]!].statistics.peakBitrate = 1_000_000
        state.renditions[state.index["360p"]!].statistics.iFramePeakBitrate = 120_000
        state.addRendition("360p-vtt")
        state.renditions[state.index["360p-vtt"]!].tracks = [
            TrackInfo(kind: .subtitles, codec: "wvtt", trackID: 1, timescale: 90000)
        ]
        state.renditions[state.index["360p-vtt"]!].role = .subtitles(parent: "360p")
        state.renditions[state.index["360p-vtt"]!].statistics.peakBitrate = 400
        #expect(
            try Self.render(state) == """
                #EXTM3U
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="360p-vtt",DEFAULT=NO,AUTOSELECT=YES,FORCED=NO,URI="360p-vtt/index.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=1000400,AVERAGE-BANDWIDTH=1,CODECS="avc1.64001e,mp4a.40.2",RESOLUTION=640x360,SUBTITLES="subs",CLOSED-CAPTIONS=NONE
                360p/index.m3u8
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=120000,AVERAGE-BANDWIDTH=1,CODECS="avc1.64001e",RESOLUTION=640x360,URI="360p/iframes.m3u8"

                """)
    }
}
