import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("Render then parse gives the same value", .offThePool)
struct MediaPlaylistRoundTripTests {
    static let start = ProgramDateTime(millisecondsSince1970: 1_795_416_545_123)
    static let mapA = MediaInitializationSection(uri: "init-0.mp4")
    static let mapB = MediaInitializationSection(uri: "init-1.mp4", byteRange: ByteRange(length: 800, offset: 0))

    static let playlists: [MediaPlaylist] = [
        MediaPlaylist(targetDuration: 6),
        MediaPlaylist(
            targetDuration: 2, mediaSequence: 1041, discontinuitySequence: 3,
            segments: (0..<6).map {
                MediaSegment(
                    uri: "\(1041 + $0).ts", duration: 2.002,
                    programDateTime: start.adding(milliseconds: Int64($0) * 2002))
            }),
        MediaPlaylist(
            targetDuration: 4, mediaSequence: 7, independentSegments: true, playlistType: .event, endList: true,
            start: StartOffset(timeOffset: 1.5, precise: true), definitions: [.value(name: "v", value: "1")],
            segments: [
                MediaSegment(uri: "7.m4s", duration: 4, map: mapA),
                MediaSegment(
                    uri: "8.m4s", duration: 3.5, title: "t", discontinuity: true, gap: true,
                    programDateTime: start, map: mapB, byteRange: ByteRange(length: 10, offset: 800),
                    dateRanges: [
                        DateRange(
                            id: "ad", classAttribute: "k", startDate: start, cue: ["ONCE"], plannedDuration: 30.25,
                            clientAttributes: [
                                ClientAttribute(name: "X-A", value: .quotedString("b")),
                                ClientAttribute(name: "X-B", value: .decimal(2.5)),
                                ClientAttribute(name: "X-C", value: .hexadecimal([1, 2])),
                            ], scte35Out: [0xFC, 0x30]),
                        DateRange(
                            id: "ad", startDate: start, endDate: start.adding(milliseconds: 30_250), duration: 30.25,
                            scte35In: [0xFC]),
                    ], extraTags: ["#EXT-X-CUE-OUT:30", #"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://k""#]),
                MediaSegment(uri: "9.m4s", duration: 4, map: mapB, byteRange: ByteRange(length: 10)),
                MediaSegment(uri: "10.m4s", duration: 0.001, map: mapA),
            ]),
        MediaPlaylist(
            targetDuration: 10, playlistType: .vod, endList: true, start: StartOffset(timeOffset: -25.125),
            definitions: [.import(name: "tok"), .queryParameter(name: "q")],
            segments: [MediaSegment(uri: "a.ts?t={$tok}", duration: 9.999)]),
    ]

    @Test("media playlists", arguments: 0..<playlists.count)
    func mediaRoundTrip(index: Int) throws {
        let playlist = Self.playlists[index]
        let text = playlist.render()
        let parsed = try MediaPlaylist.parse(text)
        #expect(parsed == playlist)
        #expect(parsed.render() == text)
    }

    @Test("multivariant playlists", arguments: 0..<MultivariantPlaylistTests.playlists.count)
    func multivariantRoundTrip(index: Int) throws {
        let playlist = MultivariantPlaylistTests.playlists[index]
        let text = playlist.render()
        let parsed = try MultivariantPlaylist.parse(text)
        #expect(parsed == playlist)
        #expect(parsed.render() == text)
    }
}
