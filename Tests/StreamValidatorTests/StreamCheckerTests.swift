import HLSPlaylist
import StreamValidator
import Testing

/// The checker on a manual clock: a good stream passes every check that can run, and each fault fails its own
/// check and no other (each test names the one check it expects to fail).
@Suite("StreamChecker: the HLS rules on a manual clock")
struct StreamCheckerTests {
    /// Expects exactly `failing` to fail; the message shows the whole report.
    private func expectOnly(_ failing: [ValidationCheck], in report: ValidationReport, _ evidence: String? = nil) {
        #expect(report.failed == failing, "\n\(report.text)")
        #expect(report.exitStatus == (failing.isEmpty ? 0 : 1))
        if let evidence, let check = failing.first {
            let summary = report.result(check)?.summary ?? ""
            #expect(summary.contains(evidence), "\(check.rawValue): \(summary)")
        }
    }

    @Test("a good sliding window passes every rule (only Low-Latency HLS, not used, is skipped)")
    func goodStreamPasses() {
        let report = FakeLiveStream().run()
        expectOnly([], in: report)
        let skipped = report.results.filter { $0.verdict == .skip }.map(\.check)
        #expect(skipped == [.partDurations, .lowLatency], "\n\(report.text)")
        // MSN 0...15 in each rendition; MSN 0...9 removed and fetched again.
        #expect(report.segmentsDownloaded == 2 * 16, "\(report.segmentsDownloaded) segments downloaded")
        #expect(report.removedSegmentsFetched == 2 * 10)
    }

    @Test("a VIDEO-RANGE or HDCP-LEVEL RFC 8216bis does not define is noted, not failed (clients skip the variant)")
    func unknownVideoAttributesAreNoted() {
        var stream = FakeLiveStream()
        stream.multivariantAttributes += ",VIDEO-RANGE=HDR,HDCP-LEVEL=TYPE-9"
        let report = stream.run()
        expectOnly([], in: report)
        let summary = report.result(.multivariant)?.summary ?? ""
        #expect(summary.contains("VIDEO-RANGE=HDR"), "\(summary)")
        #expect(summary.contains("HDCP-LEVEL=TYPE-9"), "\(summary)")
        #expect(summary.ranges(of: "VIDEO-RANGE=HDR").count == 1, "noted once: \(summary)")
    }

    @Test("one media playlist: the multivariant and cross-rendition checks say why they skip")
    func singleMediaPlaylist() {
        var stream = FakeLiveStream()
        stream.renditions = []
        let report = stream.run()
        expectOnly([], in: report)
        for check in [ValidationCheck.bandwidth, .codecs, .multivariant] {
            #expect(report.result(check)?.summary.contains("media playlist") == true)
        }
        #expect(report.result(.renditionProgramDateTime)?.verdict == .skip)
        #expect(report.result(.renditionDiscontinuities)?.verdict == .skip)
    }

    @Test("Low-Latency HLS with parts of PART-TARGET passes rule 38; the rest of LL is reported as not checked")
    func lowLatencyPartsWithinTheTargetPass() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            var window = FakeLiveStream.sliding(at: now)
            window.partTarget = 0.5
            return window
        }
        let report = stream.run()
        expectOnly([], in: report)
        #expect(report.result(.partDurations)?.verdict == .pass, "\n\(report.text)")
        #expect(report.result(.lowLatency)?.summary.contains("EXT-X-PART-INF present") == true)
    }

    @Test("a one-frame part in mid-segment, neither INDEPENDENT nor last, fails rule 38; so does a part over PART-TARGET")
    func partsOutOfBoundsFailRule38() {
        for (parts, evidence) in [
            ([(0.5, true), (0.46, false), (0.04, false), (0.5, false), (0.5, false)], "lasts 0.04 s, less than 85 %"),
            ([(0.5, true), (0.6, false), (0.4, false), (0.5, false)], "lasts 0.6 s, more than PART-TARGET"),
        ] as [([(duration: Double, independent: Bool)], String)] {
            var stream = FakeLiveStream()
            stream.window = { _, now in
                var window = FakeLiveStream.sliding(at: now)
                window.partTarget = 0.5
                window.parts = { msn in msn == 7 ? parts : [(0.5, true), (0.5, false), (0.5, false), (0.5, false)] }
                return window
            }
            expectOnly([.partDurations], in: stream.run(), evidence)
        }
    }

    @Test("the MSN restarting at 0 (an encoder restart) fails rule 10")
    func mediaSequenceRestartsAtZero() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            guard now >= 10_000 else { return FakeLiveStream.sliding(at: now) }
            // The encoder restarted at 10 s: new names, the numbering from 0, the clock going on.
            var window = FakeLiveStream.Window(first: 0, last: UInt64((now - 10_000) / 2000))
            window.uri = { "restart-\($0).ts" }
            window.programDateTimeBase = 1_700_000_010_000
            window.dateRange = nil
            return window
        }
        expectOnly(
            [.mediaSequence], in: stream.run(),
            "EXT-X-MEDIA-SEQUENCE went from 4 to 0 and the newest MSN from 9 to 0 at 10.0 s")
    }

    @Test("a restart at 0 before the window slid (EXT-X-MEDIA-SEQUENCE:0 throughout) fails rule 10")
    func newestMSNGoesBackToZero() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            // MSN 0...3 listed until 6 s (one more every 1.5 s), then the restarted encoder's MSN 0, 1, ... under the same names.
            var window = FakeLiveStream.Window(
                first: 0, last: now < 6000 ? UInt64(min(now / 1500, 4)) : UInt64((now - 6000) / 2000))
            window.programDateTimeBase = now < 6000 ? 1_700_000_000_000 : 1_700_000_006_000
            window.dateRange = nil
            return window
        }
        stream.duration = 12_000
        expectOnly(
            [.mediaSequence], in: stream.run(), "EXT-X-MEDIA-SEQUENCE went from 0 to 0 and the newest MSN from 3 to 0")
    }

    @Test("the MSN going back by two (a stale copy served once) fails rule 10")
    func mediaSequenceGoesBack() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            now == 12_000 ? FakeLiveStream.sliding(at: now - 4000) : FakeLiveStream.sliding(at: now)
        }
        expectOnly(
            [.mediaSequence], in: stream.run(),
            "EXT-X-MEDIA-SEQUENCE went from 5 to 4 and the newest MSN from 10 to 9 at 12.0 s")
    }

    @Test("a URI changing at an MSN fails rule 10")
    func uriChanges() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            var window = FakeLiveStream.sliding(at: now)
            if now >= 10_000 { window.uri = { $0 == 8 ? "8-again.ts" : "\($0).ts" } }
            return window
        }
        expectOnly([.mediaSequence], in: stream.run(), "the URI at this MSN changed")
    }

    @Test("EXT-X-ENDLIST appearing (then the stream ending) fails rule 18")
    func endListAppears() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            var window = FakeLiveStream.sliding(at: min(now, 10_000))
            window.endList = now >= 10_000
            return window
        }
        expectOnly([.live], in: stream.run(), "EXT-X-ENDLIST after MSN 10")
    }

    @Test("EXT-X-ENDLIST, then the encoder restarting at MSN 0 (ffmpeg's HLS muxer): rules 18 and 10")
    func endListThenRestart() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            if now < 10_000 { return FakeLiveStream.sliding(at: now) }
            if now < 12_000 {
                var window = FakeLiveStream.sliding(at: 10_000)
                window.endList = true
                return window
            }
            var window = FakeLiveStream.Window(first: 0, last: UInt64((now - 12_000) / 2000))
            window.programDateTimeBase = 1_700_000_012_000
            window.dateRange = nil
            return window
        }
        let report = stream.run()
        expectOnly([.mediaSequence, .live], in: report)
        #expect(report.result(.live)?.evidence.contains { $0.contains("EXT-X-ENDLIST removed") } == true)
    }

    @Test("a playlist without a new segment for 5 s (TD 2) fails rule 15")
    func stalePlaylist() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            // Frozen from 10 s to 15 s, then the two segments made meanwhile appear at once.
            FakeLiveStream.sliding(at: (10_000..<15_000).contains(now) ? 10_000 : now)
        }
        expectOnly([.freshness], in: stream.run(), "no new segment for at least 4.5 s (limit 1.5 × TD = 3 s)")
    }

    @Test("a window slid to two segments (4 s < 3 × TD) fails rule 14")
    func windowTooShort() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            var window = FakeLiveStream.sliding(at: now)
            if now >= 10_000 { window.first = window.last - 1 }
            return window
        }
        expectOnly([.window], in: stream.run(), "the playlist lists 4 s < 3 × TD = 6 s")
    }

    @Test("an EXTINF of 2.5 s under EXT-X-TARGETDURATION:2 fails rule 7")
    func extinfAboveTargetDuration() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            var window = FakeLiveStream.sliding(at: now)
            // The media lasts 2 s: 0.5 s more in EXTINF stays within the timestamp check's tolerance.
            window.duration = { $0 == 8 ? 2.5 : 2 }
            return window
        }
        expectOnly([.targetDuration], in: stream.run(), "MSN 8 (8.ts): EXTINF 2.5 rounds above")
    }

    @Test("EXT-X-TARGETDURATION changing from 2 to 3 fails rule 8")
    func targetDurationChanges() {
        var stream = FakeLiveStream()
        stream.window = { name, now in
            var window = FakeLiveStream.sliding(at: now)
            if now >= 10_000 { window.targetDuration = 3 }
            return window
        }
        expectOnly([.targetDurationConstant], in: stream.run(), "EXT-X-TARGETDURATION changed from 2 to 3")
    }

    @Test("rendition b's PDT 40 ms off rendition a's fails rule 20")
    func programDateTimeDiffersAcrossRenditions() {
        var stream = FakeLiveStream()
        stream.window = { name, now in
            var window = FakeLiveStream.sliding(at: now)
            if name == "b" { window.programDateTimeBase = 1_700_000_000_040 }
            return window
        }
        expectOnly(
            [.renditionProgramDateTime], in: stream.run(),
            "PDT 2023-11-14T22:13:20.000Z in a/index.m3u8 but 2023-11-14T22:13:20.040Z in b/index.m3u8")
    }

    @Test("rendition b's discontinuity sequence one above rendition a's fails rules 13, 20")
    func discontinuitySequenceDiffersAcrossRenditions() {
        var stream = FakeLiveStream()
        stream.window = { name, now in
            var window = FakeLiveStream.sliding(at: now)
            if name == "b" { window.discontinuitySequence = 1 }
            return window
        }
        expectOnly(
            [.renditionDiscontinuities], in: stream.run(),
            "MSN 0: discontinuity sequence number 0 in a/index.m3u8 but 1 in b/index.m3u8")
    }

    @Test("a PDT without milliseconds fails rule 21")
    func programDateTimeWithoutMilliseconds() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            var window = FakeLiveStream.sliding(at: now)
            window.formatProgramDateTime = { String($0.formatted.dropLast(5)) + "Z" }
            return window
        }
        expectOnly(
            [.programDateTimeFormat], in: stream.run(),
            "EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:13:20Z is not YYYY-MM-DDThh:mm:ss.sss with a time zone")
    }

    @Test("a DATERANGE's PLANNED-DURATION changing from 30 to 20 fails rules 26, 27")
    func dateRangeAttributeChanges() {
        var stream = FakeLiveStream()
        stream.window = { _, now in
            var window = FakeLiveStream.sliding(at: now)
            if now >= 10_000 { window.dateRange = "CLASS=\"com.example.ad\",PLANNED-DURATION=20" }
            return window
        }
        expectOnly(
            [.dateRangeImmutable], in: stream.run(),
            "EXT-X-DATERANGE ID=\"ad-1\" PLANNED-DURATION changed from 30.0 to 20.0")
    }

    @Test("a removed segment answering 404 fails rule 17")
    func removedSegmentIsGone() {
        var stream = FakeLiveStream()
        stream.answer = { request, _ in
            (request.purpose == .removed ? 404 : 200, FakeLiveStream.segmentHeaders)
        }
        expectOnly([.removedSegments], in: stream.run(), "answered status 404")
    }

    @Test("a playlist served as text/plain for an hour fails rules 2/45 and 47")
    func playlistHeaders() {
        var stream = FakeLiveStream()
        stream.playlistHeaders = [
            "Content-Type": "text/plain", "Cache-Control": "max-age=3600", "Access-Control-Allow-Origin": "*",
        ]
        expectOnly([.contentTypes, .cacheHeaders], in: stream.run())
    }

    @Test("BANDWIDTH at half the measured peak fails rule 34 (bandwidth), a wrong CODECS rule 34 (codecs)")
    func bandwidthAndCodecs() {
        var stream = FakeLiveStream()
        stream.multivariantAttributes =
            "BANDWIDTH=\(FakeLiveStream.peakBitrate / 2),CODECS=\"avc1.640028,mp4a.40.2\",RESOLUTION=320x180"
        let report = stream.run()
        expectOnly([.bandwidth, .codecs], in: report)
        #expect(report.result(.bandwidth)?.summary.contains("200 % of BANDWIDTH") == true, "\(report.text)")
        #expect(report.result(.codecs)?.summary.contains("CODECS=\"avc1.640028,mp4a.40.2\" but the media has") == true)
    }

    @Test("the report's lines, summary and JSON")
    func reportRendering() {
        var stream = FakeLiveStream()
        stream.answer = { request, _ in (request.purpose == .removed ? 404 : 200, FakeLiveStream.segmentHeaders) }
        let report = stream.run()
        let lines = report.text.split(separator: "\n")
        #expect(lines.count == ValidationCheck.allCases.count + 2)
        #expect(lines.contains { $0.hasPrefix("FAIL  17       removed-segments          a/index.m3u8 MSN 0 (") })
        #expect(
            lines.last?.hasPrefix("FAIL: 1 of \(ValidationCheck.allCases.count) checks failed (removed-segments)")
                == true)
        #expect(report.json.contains("\"exitStatus\" : 1"))
        #expect(report.json.contains("\"verdict\" : \"FAIL\""))
    }
}
