import Foundation
import TestSupport
import Testing

@testable import HLSPlaylist

/// HLS rule 38 on the parts a playlist lists (`MediaPlaylist.validatePartDurations`).
@Suite("EXT-X-PART durations against PART-TARGET (HLS rule 38)", .offThePool)
struct PartDurationValidationTests {
    static let text = """
        #EXTM3U
        #EXT-X-VERSION:9
        #EXT-X-TARGETDURATION:2
        #EXT-X-PART-INF:PART-TARGET=0.500
        #EXT-X-MEDIA-SEQUENCE:10
        #EXT-X-PART:DURATION=0.480,URI="10.0.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.480,URI="10.1.ts"
        #EXT-X-PART:DURATION=0.040,URI="10.2.ts"
        #EXT-X-PART:DURATION=0.480,URI="10.3.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.200,URI="10.4.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.320,URI="10.5.ts"
        #EXTINF:2.000,
        10.ts
        #EXT-X-PART:DURATION=0.480,URI="11.0.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.100,URI="11.1.ts",GAP=YES
        #EXT-X-PART:DURATION=0.520,URI="11.2.ts"
        #EXT-X-PART:DURATION=0.424,URI="11.3.ts"
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="11.4.ts"

        """

    @Test("a short part that is neither independent, gap nor last, and a part over the target, are violations")
    func shortAndLongParts() throws {
        let playlist = try MediaPlaylist.parse(Self.text)
        #expect(
            playlist.validatePartDurations().map(\.description) == [
                "HLS rule 38: part 10.2.ts lasts 0.04 s, less than 85 % of PART-TARGET 0.5 s, and is neither "
                    + "INDEPENDENT, nor GAP, nor the last of its segment",
                "HLS rule 38: part 11.2.ts lasts 0.52 s, more than PART-TARGET 0.5 s",
                // The segment in progress has its last part still to come.
                "HLS rule 38: part 11.3.ts lasts 0.424 s, less than 85 % of PART-TARGET 0.5 s, and is neither "
                    + "INDEPENDENT, nor GAP, nor the last of its segment",
            ])
    }

    @Test("parts of 85 % of the target and more, as rendered, break no rule; nor does a playlist without parts")
    func partsWithinBounds() throws {
        let within = Self.text.replacingOccurrences(of: "0.040", with: "0.425")
            .replacingOccurrences(of: "0.520", with: "0.500").replacingOccurrences(of: "0.424", with: "0.480")
        #expect(try MediaPlaylist.parse(within).validatePartDurations() == [])
        let plain = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.000,\n0.ts\n"
        #expect(try MediaPlaylist.parse(plain).validatePartDurations() == [])
    }
}
