import MediaProbe

/// Segment answers: downloadable and media (rules 16, 31, 32), their headers (45, 47, 48), timestamps continuous
/// unless a DISCONTINUITY says otherwise (13, 29), and removed segments still there (17).
extension StreamChecker {
    /// The Content-Types a container's segments may be served with (rule 45).
    static func contentTypes(for container: MediaContainer) -> Set<String> {
        switch container {
        case .mpegTS: ["video/mp2t"]
        case .fragmentedMP4Segment: ["video/mp4", "video/iso.segment", "audio/mp4", "application/mp4"]
        case .fragmentedMP4Init: ["video/mp4", "audio/mp4", "application/mp4"]
        case .adts: ["audio/aac"]
        case .webVTT: ["text/vtt"]
        }
    }

    /// Feeds the answer to a ``SegmentRequest`` the checker returned.
    public mutating func observeSegment(_ request: SegmentRequest, _ fetch: HTTPFetch) {
        guard var history = renditions[request.playlist] else { return }
        switch request.purpose {
        case .segment: observeMedia(request, fetch, history: &history)
        case .initSection: observeInitSection(request, fetch, history: &history)
        case .removed: observeRemoved(request, fetch, history: history)
        }
        renditions[request.playlist] = history
    }

    /// Status 200 without redirect and a body, else a failure of `check`; true when the answer can be read.
    private mutating func downloaded(_ fetch: HTTPFetch, label: String, check: ValidationCheck) -> Bool {
        guard let status = fetch.status else {
            fail(check, "\(label): \(fetch.outcome) at \(Self.time(fetch.sent))")
            return false
        }
        if (300..<400).contains(status) {
            fail(
                check,
                "\(label): redirect \(status) to \(fetch.header("location") ?? "nowhere") (media requests must not "
                    + "be redirected, A8.18)")
            return false
        }
        guard status == 200, !fetch.body.isEmpty else {
            fail(check, "\(label): \(status == 200 ? "empty body" : "status \(status)") at \(Self.time(fetch.sent))")
            return false
        }
        return true
    }

    private mutating func observeMedia(_ request: SegmentRequest, _ fetch: HTTPFetch, history: inout RenditionHistory) {
        segmentsDownloaded += 1
        checked(.segmentsDownloadable)
        let label = "\(history.name) MSN \(request.msn) (\(request.url))"
        guard downloaded(fetch, label: label, check: .segmentsDownloadable) else { return }
        checkCORS(fetch, kind: "segment")
        checked(.cacheHeaders)
        let target = history.targetDuration ?? 1
        let maxAge = fetch.cacheControlSeconds("s-maxage") ?? fetch.cacheControlSeconds("max-age")
        if fetch.cacheControlHas("no-store") || fetch.cacheControlHas("no-cache")
            || (maxAge.map { $0 < target } ?? false)
        {
            fail(
                .cacheHeaders,
                "segment \(request.url): Cache-Control \(fetch.header("cache-control") ?? ""): a segment never "
                    + "changes, caches should keep it")
        }
        let entry = history.entries[request.msn].flatMap { $0.url == request.url ? $0 : nil }
        let initSection = entry?.mapURL.flatMap { history.initSections[$0] }
        let info: SegmentInfo
        do {
            info = try MediaProbe.probeSegment(fetch.body, initSection: initSection)
        } catch {
            fail(.segmentsDownloadable, "\(label): not a media segment: \(error)")
            return
        }
        checkContentType(fetch, container: info.container, what: "segment")
        if info.container == .fragmentedMP4Segment, entry != nil, entry?.mapURL == nil {
            fail(.segmentsDownloadable, "\(label): an fMP4 segment without EXT-X-MAP (rule 31)")
        }
        if info.tracks.contains(where: { $0.kind == .video }), !info.startsWithKeyframe {
            fail(.segmentsDownloadable, "\(label): the video does not start with a keyframe (A7.4)")
        }
        guard entry != nil else { return }
        history.media[request.msn] = RenditionHistory.SegmentMedia(byteCount: fetch.body.count, info: info)
        let downloaded = history.media.keys
        if let lower = downloaded.filter({ $0 < request.msn }).max() {
            checkTimestamps(from: lower, to: request.msn, history: history)
        }
        if let higher = downloaded.filter({ $0 > request.msn }).min() {
            checkTimestamps(from: request.msn, to: higher, history: history)
        }
    }

    private mutating func checkContentType(_ fetch: HTTPFetch, container: MediaContainer, what: String) {
        checked(.contentTypes)
        let allowed = Self.contentTypes(for: container)
        if !(fetch.mediaType.map(allowed.contains) ?? false) {
            fail(
                .contentTypes,
                "\(what) \(fetch.url): Content-Type \(fetch.header("content-type") ?? "missing") for "
                    + "\(container.rawValue) (expected \(allowed.sorted().joined(separator: " or ")))")
        }
    }

    /// Rules 13 and 29: between two downloaded segments with no DISCONTINUITY after the first, the media timestamps
    /// advance by the EXTINFs in between (GAP entries included).
    private mutating func checkTimestamps(from low: UInt64, to high: UInt64, history: RenditionHistory) {
        guard let a = history.media[low]?.info, let b = history.media[high]?.info else { return }
        var expected: Int64 = 0
        var gaps = 0
        for msn in low..<high {
            guard let entry = history.entries[msn], let next = history.entries[msn + 1] else { return }
            if next.discontinuity { return }
            if next.gap { gaps += 1 }
            expected += entry.durationMilliseconds
        }
        let scale = a.startTime.timescale
        guard scale > 0, b.startTime.timescale == scale, a.container == b.container else { return }
        var end = b.startTime.ticks
        if a.container == .mpegTS {
            end = MPEGTimestamp.unwrap(end, near: a.startTime.ticks + expected * scale / 1000)
        }
        let step = (end - a.startTime.ticks) * 1000 / scale
        checked(.discontinuities)
        if abs(step - expected) > Self.timestampJumpTolerance {
            let between = gaps > 0 ? " (\(gaps) GAP entries between)" : ""
            fail(
                .discontinuities,
                "\(history.name) MSN \(low) -> \(high): media timestamps advance \(Self.seconds(step)), the EXTINFs "
                    + "\(Self.seconds(expected))\(between), and no EXT-X-DISCONTINUITY marks the jump")
        }
    }

    private mutating func observeInitSection(
        _ request: SegmentRequest, _ fetch: HTTPFetch, history: inout RenditionHistory
    ) {
        checked(.segmentsDownloadable)
        let label = "\(history.name) EXT-X-MAP (\(request.url))"
        guard downloaded(fetch, label: label, check: .segmentsDownloadable) else { return }
        checkCORS(fetch, kind: "init section")
        do {
            history.initSections[request.url] = try MediaProbe.probeInitSection(fetch.body)
            checkContentType(fetch, container: .fragmentedMP4Init, what: "init section")
        } catch {
            fail(.segmentsDownloadable, "\(label): not an initialization section: \(error)")
        }
    }

    private mutating func observeRemoved(_ request: SegmentRequest, _ fetch: HTTPFetch, history: RenditionHistory) {
        removedSegmentsFetched += 1
        guard let mustStayUntil = request.mustStayUntil, fetch.sent <= mustStayUntil else { return }
        checked(.removedSegments)
        if fetch.status == 200, !fetch.body.isEmpty { return }
        fail(
            .removedSegments,
            "\(history.name) MSN \(request.msn) (\(request.url)): removed from the playlist by "
                + "\(Self.time(request.removalSeen ?? fetch.sent)), answered \(fetch.outcome) at "
                + "\(Self.time(fetch.sent)); it must stay downloadable until \(Self.time(mustStayUntil)) "
                + "(its EXTINF plus the playlist's duration)")
    }
}
