import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("Mutated playlists", .offThePool)
struct MutationTests {
    /// Random byte edits of valid playlists: parsing never traps, and whatever parses renders to text that parses
    /// back to the same rendering (the renderer normalizes once, then is stable).
    /// (Run with 200 000 iterations during development; 4 000 here to keep the suite fast.)
    @Test("never crash; what parses re-renders stably")
    func mutations() throws {
        var generator = SplitMix64(seed: 42)
        let seeds =
            MediaPlaylistRoundTripTests.playlists.map { Array($0.render().utf8) }
            + MultivariantPlaylistTests.playlists.map { Array($0.render().utf8) }
            + [Array(MediaPlaylistParsingTests.ffmpegProgramDateTime.utf8)]
        let interesting: [UInt8] = Array("\"=,:#@{$}x0\r\n \u{0}".utf8) + [0xC2, 0x85, 0xFF, 0xE2]
        for _ in 0..<4000 {
            var bytes = seeds[Int(generator.next() % UInt64(seeds.count))]
            for _ in 0...(generator.next() % 6) {
                guard !bytes.isEmpty else { break }
                let position = Int(generator.next() % UInt64(bytes.count))
                let byte = interesting[Int(generator.next() % UInt64(interesting.count))]
                switch generator.next() % 4 {
                case 0: bytes[position] = byte
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(byte, at: position)
                default: bytes.removeSubrange(position..<min(bytes.count, position + Int(generator.next() % 30)))
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if let parsed = try? MediaPlaylist.parse(text) {
                let once = parsed.render()
                #expect(try MediaPlaylist.parse(once).render() == once)
            }
            if let parsed = try? MultivariantPlaylist.parse(text) {
                let once = parsed.render()
                #expect(try MultivariantPlaylist.parse(once).render() == once)
            }
        }
    }
}
