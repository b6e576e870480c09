import HLSPlaylist

/// One reload of a media playlist: the rules between a playlist and its earlier reloads (rules 7-15, 18-27, 30, 33)
/// and across renditions (rule 20).
extension StreamChecker {
    /// Feeds one reload of the media playlist at `playlistURL`.
    /// - Parameters:
    ///   - playlistURL: the media playlist's absolute URL (one of ``observeMultivariant(_:)``'s, or the URL given).
    ///   - fetch: the answer and its times.
    /// - Returns: what to download: init sections and newly listed segments now, removed segments at their
    ///   ``SegmentRequest/notBefore``.
    public mutating func observeMediaPlaylist(_ playlistURL: String, _ fetch: HTTPFetch) -> [SegmentRequest] {
        if renditions[playlistURL] == nil {
            renditions[playlistURL] = RenditionHistory(url: playlistURL, name: playlistURL)
            renditionOrder.append(playlistURL)
        }
        var history = renditions[playlistURL]!
        let requests = observe(fetch, into: &history)
        renditions[playlistURL] = history
        return requests
    }

    private mutating func observe(_ fetch: HTTPFetch, into history: inout RenditionHistory) -> [SegmentRequest] {
        reloads += 1
        history.reloads += 1
        let name = history.name
        guard let text = loadText(fetch, kind: "media playlist") else { return [] }
        let playlist: MediaPlaylist
        do {
            playlist = try MediaPlaylist.parse(text)
        } catch {
            fail(.syntax, "media playlist \(fetch.url): \(error)")
            return []
        }
        let targetMilliseconds = Int64(playlist.targetDuration) * 1000
        checkCacheLifetime(fetch, targetDuration: playlist.targetDuration)
        let declared = PlaylistVersion.declared(in: text)
        let needed = Self.neededVersion(playlist)
        checkVersion(
            declared: declared, needed: needed.version, needs: needed.feature, kind: "media playlist", url: fetch.url)
        if playlist.partTarget != nil {
            lowLatencySeen = true
            checked(.partDurations)
            for violation in playlist.validatePartDurations() { fail(.partDurations, "\(name): \(violation)") }
        }
        checkProgramDateTimeText(text, name: name)
        checkTargetDuration(playlist, history: &history)
        checkDiscontinuitySequenceTag(text, history: &history)

        var requests: [SegmentRequest] = []
        let previous = history.lastPlaylist
        let previousNewest = history.newestMSN
        // Rule 10: the numbering never goes back: neither EXT-X-MEDIA-SEQUENCE nor the newest MSN (an encoder that
        // restarted at 0 with a window that never slid keeps EXT-X-MEDIA-SEQUENCE:0). A new numbering epoch begins.
        checked(.mediaSequence)
        let listedNewest =
            playlist.segments.isEmpty ? nil : playlist.mediaSequence + UInt64(playlist.segments.count - 1)
        if let previous,
            playlist.mediaSequence < previous.mediaSequence
                || (listedNewest != nil && previousNewest != nil && listedNewest! < previousNewest!)
        {
            fail(
                .mediaSequence,
                "\(name): EXT-X-MEDIA-SEQUENCE went from \(previous.mediaSequence) to \(playlist.mediaSequence) and "
                    + "the newest MSN from \(previousNewest.map(String.init) ?? "none") to "
                    + "\(listedNewest.map(String.init) ?? "none") at \(Self.time(fetch.received)): the numbering went back"
            )
            let listed = Set(playlist.segments.map { Self.resolve($0.uri, against: history.url) })
            let gone = history.lastURLs.filter { !listed.contains($0.value) }.keys
            requests += scheduleRemovals(of: Set(gone), history: &history, fetch: fetch)
            history.restartNumbering()
        }
        let sameEpoch = history.lastPlaylist != nil
        checkEndList(playlist, fetch: fetch, history: &history)
        checkPlaylistType(playlist, previous: sameEpoch ? previous : nil, name: name)

        let first = playlist.mediaSequence
        let newest = listedNewest
        let total = readEntries(
            playlist, playlistURL: history.url, fetch: fetch, history: &history, requests: &requests)
        for offset in playlist.segments.indices { history.listedPlaylistDuration[first + UInt64(offset)] = total }

        // Rule 14 and rule 17: head removal.
        if sameEpoch, let previous, first > previous.mediaSequence {
            history.slid = true
            checked(.window)
            if total < 3 * targetMilliseconds {
                fail(
                    .window,
                    "\(name): after MSN \(previous.mediaSequence)..\(first - 1) were removed at "
                        + "\(Self.time(fetch.received)), the playlist lists \(Self.seconds(total)) < 3 × TD = "
                        + "\(Self.seconds(3 * targetMilliseconds))")
            }
            let removed = Set(history.lastURLs.keys.filter { $0 < first })
            requests += scheduleRemovals(of: removed, history: &history, fetch: fetch)
        }
        checkFreshness(
            newest: newest, previousNewest: sameEpoch ? previousNewest : nil, fetch: fetch, history: &history)
        checkDateRanges(playlist, previous: sameEpoch ? previous : nil, name: name, fetch: fetch)
        checkKeysAndDefines(playlist, previous: sameEpoch ? previous : nil, declared: declared, name: name)

        history.lastPlaylist = playlist
        history.lastURLs = [:]
        for (offset, segment) in playlist.segments.enumerated() where !segment.gap {
            history.lastURLs[first + UInt64(offset)] = Self.resolve(segment.uri, against: history.url)
        }
        if let newest { history.newestMSN = max(history.newestMSN ?? 0, newest) }
        history.lastReloadSent = fetch.sent
        return requests
    }

    /// Rule 47: a media playlist is cached no longer than one target duration.
    private mutating func checkCacheLifetime(_ fetch: HTTPFetch, targetDuration: Int) {
        checked(.cacheHeaders)
        if let age = fetch.cacheControlSeconds("s-maxage") ?? fetch.cacheControlSeconds("max-age"), age > targetDuration
        {
            fail(
                .cacheHeaders,
                "media playlist \(fetch.url): Cache-Control \(fetch.header("cache-control") ?? "") lets caches keep "
                    + "it \(age) s > TD \(targetDuration) s (players would miss new segments)")
        }
    }

    /// Rules 7, 8, 20: TD at least 1, constant across reloads, the same in every rendition.
    private mutating func checkTargetDuration(_ playlist: MediaPlaylist, history: inout RenditionHistory) {
        checked(.targetDuration)
        checked(.targetDurationConstant)
        if playlist.targetDuration < 1 {
            fail(.targetDuration, "\(history.name): EXT-X-TARGETDURATION \(playlist.targetDuration) < 1")
        }
        if let known = history.targetDuration, known != playlist.targetDuration {
            fail(
                .targetDurationConstant,
                "\(history.name): EXT-X-TARGETDURATION changed from \(known) to \(playlist.targetDuration)")
        }
        history.targetDuration = history.targetDuration ?? playlist.targetDuration
        for (url, other) in renditions where url != history.url {
            if let theirs = other.targetDuration, theirs != playlist.targetDuration {
                fail(
                    .targetDurationConstant,
                    "EXT-X-TARGETDURATION \(playlist.targetDuration) in \(history.name) but \(theirs) in \(other.name)")
            }
        }
    }

    /// Rule 12: once present, EXT-X-DISCONTINUITY-SEQUENCE stays.
    private mutating func checkDiscontinuitySequenceTag(_ text: String, history: inout RenditionHistory) {
        let present = text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:")
        if present {
            history.discontinuitySequenceTagSeen = true
        } else if history.discontinuitySequenceTagSeen {
            fail(.discontinuitySequence, "\(history.name): EXT-X-DISCONTINUITY-SEQUENCE disappeared")
        }
    }

    /// Rules 18 and 11: EXT-X-ENDLIST ends the stream; after it nothing changes.
    private mutating func checkEndList(_ playlist: MediaPlaylist, fetch: HTTPFetch, history: inout RenditionHistory) {
        checked(.live)
        if let ended = history.endList {
            if playlist != ended.playlist {
                let change =
                    playlist.endList
                    ? "segments changed" : "EXT-X-ENDLIST removed, MSN \(playlist.mediaSequence)+ listed again"
                fail(
                    .live,
                    "\(history.name): the playlist changed after its EXT-X-ENDLIST (seen at \(Self.time(ended.at))): "
                        + "\(change) at \(Self.time(fetch.received))")
                history.endList = playlist.endList ? (fetch.received, playlist) : nil
            }
        } else if playlist.endList {
            flushStaleness(history: &history)
            history.endList = (fetch.received, playlist)
            let last = playlist.mediaSequence + UInt64(max(playlist.segments.count, 1) - 1)
            fail(
                .live,
                "\(history.name): EXT-X-ENDLIST after MSN \(last) at \(Self.time(fetch.received)): the stream ended "
                    + "while watched (players stop there)")
        }
    }

    /// Rule 19: a sliding playlist has no EXT-X-PLAYLIST-TYPE; VOD never changes, EVENT only appends.
    private mutating func checkPlaylistType(_ playlist: MediaPlaylist, previous: MediaPlaylist?, name: String) {
        checked(.playlistType)
        guard let type = playlist.playlistType, let previous else { return }
        if type == .vod, playlist != previous {
            fail(.playlistType, "\(name): EXT-X-PLAYLIST-TYPE:VOD, yet the playlist changed")
        } else if playlist.mediaSequence > previous.mediaSequence {
            fail(
                .playlistType,
                "\(name): EXT-X-PLAYLIST-TYPE:\(type.rawValue) in a sliding playlist (MSN \(previous.mediaSequence) "
                    + "removed)")
        }
    }

    /// Reads every entry: rules 7, 10, 11, 12, 22, 23 against what each MSN was, rule 20 against the other
    /// renditions; new segments and init sections go to `requests`. Returns the playlist's duration in ms.
    private mutating func readEntries(
        _ playlist: MediaPlaylist, playlistURL: String, fetch: HTTPFetch, history: inout RenditionHistory,
        requests: inout [SegmentRequest]
    ) -> Int64 {
        let name = history.name
        let hasProgramDateTime = playlist.segments.contains { $0.programDateTime != nil }
        if hasProgramDateTime { programDateTimeSeen = true }
        if playlist.segments.contains(where: { !$0.dateRanges.isEmpty }), !hasProgramDateTime {
            fail(.programDateTime, "\(name): EXT-X-DATERANGE without any EXT-X-PROGRAM-DATE-TIME (rule 24)")
        }
        var sequence = playlist.discontinuitySequence
        var previousEntry: RenditionHistory.Entry?
        var total: Int64 = 0
        for (offset, segment) in playlist.segments.enumerated() {
            let msn = playlist.mediaSequence + UInt64(offset)
            if segment.discontinuity { sequence += 1 }
            let written = segment.programDateTime?.millisecondsSince1970
            let carried = previousEntry.flatMap { entry in entry.programDateTime.map { $0 + entry.durationMilliseconds }
            }
            let entry = RenditionHistory.Entry(
                msn: msn, url: Self.resolve(segment.uri, against: playlistURL), duration: segment.duration,
                discontinuity: segment.discontinuity, gap: segment.gap, programDateTime: written ?? carried,
                programDateTimeWritten: written != nil, discontinuitySequence: sequence, byteRange: segment.byteRange,
                mapURL: segment.map.map { Self.resolve($0.uri, against: playlistURL) })
            total += entry.durationMilliseconds
            let label = "\(name) MSN \(msn) (\(segment.uri))"

            checked(.targetDuration)
            if Int(segment.duration.rounded()) > playlist.targetDuration {
                fail(
                    .targetDuration,
                    "\(label): EXTINF \(segment.duration) rounds above EXT-X-TARGETDURATION \(playlist.targetDuration)")
            }
            if hasProgramDateTime {
                checked(.programDateTime)
                if segment.discontinuity, written == nil {
                    fail(.programDateTime, "\(label): EXT-X-DISCONTINUITY without EXT-X-PROGRAM-DATE-TIME (rule 22)")
                }
                if let written, let before = previousEntry, let start = before.programDateTime,
                    written < start + before.durationMilliseconds - Self.programDateTimeOverlapTolerance
                {
                    fail(
                        .programDateTime,
                        "\(label): PDT \(ProgramDateTime(millisecondsSince1970: written).formatted) is before the end "
                            + "of MSN \(msn - 1) (\(ProgramDateTime(millisecondsSince1970: start + before.durationMilliseconds).formatted)): "
                            + "the date-to-segment mapping is ambiguous (rule 23)")
                }
            }
            if let known = history.entries[msn] {
                compare(entry, with: known, label: label, at: fetch.received)
            } else {
                history.entries[msn] = entry
                compareAcrossRenditions(entry, of: history)
                if let map = entry.mapURL, !history.requested.contains(map) {
                    history.requested.insert(map)
                    requests.append(SegmentRequest(purpose: .initSection, url: map, playlist: playlistURL, msn: msn))
                }
                if !entry.gap, !history.requested.contains(entry.url) {
                    history.requested.insert(entry.url)
                    requests.append(SegmentRequest(purpose: .segment, url: entry.url, playlist: playlistURL, msn: msn))
                }
            }
            previousEntry = entry
        }
        return total
    }

    /// Rules 10, 11, 12, 23: an MSN listed again is the same segment.
    private mutating func compare(
        _ entry: RenditionHistory.Entry, with known: RenditionHistory.Entry, label: String, at time: Int64
    ) {
        let when = "at \(Self.time(time))"
        if entry.url != known.url {
            fail(.mediaSequence, "\(label): the URI at this MSN changed from \(known.url) to \(entry.url) \(when)")
        }
        checked(.segmentsImmutable)
        var changes: [String] = []
        if entry.durationMilliseconds != known.durationMilliseconds {
            changes.append("EXTINF \(known.duration) -> \(entry.duration)")
        }
        if entry.discontinuity != known.discontinuity {
            changes.append("DISCONTINUITY \(known.discontinuity) -> \(entry.discontinuity)")
        }
        if entry.gap != known.gap { changes.append("GAP \(known.gap) -> \(entry.gap)") }
        if entry.byteRange != known.byteRange { changes.append("BYTERANGE changed") }
        if entry.mapURL != known.mapURL {
            changes.append("EXT-X-MAP \(known.mapURL ?? "none") -> \(entry.mapURL ?? "none")")
        }
        if !changes.isEmpty { fail(.segmentsImmutable, "\(label): \(changes.joined(separator: ", ")) \(when)") }
        checked(.discontinuitySequence)
        if entry.discontinuitySequence != known.discontinuitySequence {
            fail(
                .discontinuitySequence,
                "\(label): discontinuity sequence number \(known.discontinuitySequence) -> "
                    + "\(entry.discontinuitySequence) \(when)")
        }
        if entry.programDateTime != known.programDateTime, entry.programDateTime != nil || known.programDateTimeWritten
        {
            let format = { (value: Int64?) in
                value.map { ProgramDateTime(millisecondsSince1970: $0).formatted } ?? "none"
            }
            let delta = (entry.programDateTime ?? 0) - (known.programDateTime ?? 0)
            if entry.programDateTime == nil || known.programDateTime == nil || abs(delta) > 1 {
                fail(
                    .programDateTime,
                    "\(label): PDT changed from \(format(known.programDateTime)) to \(format(entry.programDateTime)) "
                        + "\(when) (rule 23)")
            }
        }
    }

    /// Rule 20 (and 13): a new MSN has the PDT and discontinuity sequence number the other renditions gave it.
    private mutating func compareAcrossRenditions(_ entry: RenditionHistory.Entry, of history: RenditionHistory) {
        for url in renditionOrder where url != history.url {
            guard let other = renditions[url], other.numberingEpoch == history.numberingEpoch,
                let theirs = other.entries[entry.msn]
            else { continue }
            checked(.renditionDiscontinuities)
            if theirs.discontinuitySequence != entry.discontinuitySequence {
                fail(
                    .renditionDiscontinuities,
                    "MSN \(entry.msn): discontinuity sequence number \(theirs.discontinuitySequence) in \(other.name) "
                        + "but \(entry.discontinuitySequence) in \(history.name)")
            }
            if let mine = entry.programDateTime, let their = theirs.programDateTime {
                checked(.renditionProgramDateTime)
                if mine != their {
                    fail(
                        .renditionProgramDateTime,
                        "MSN \(entry.msn): PDT \(ProgramDateTime(millisecondsSince1970: their).formatted) in "
                            + "\(other.name) but \(ProgramDateTime(millisecondsSince1970: mine).formatted) in "
                            + "\(history.name)")
                }
            }
        }
    }

    /// Rule 17: asks for removed segments again half-way through the time they must stay downloadable.
    private mutating func scheduleRemovals(
        of msns: Set<UInt64>, history: inout RenditionHistory, fetch: HTTPFetch
    ) -> [SegmentRequest] {
        // The removal happened after the previous reload was sent (it still listed them).
        let removedAfter = history.lastReloadSent ?? fetch.sent
        var requests: [SegmentRequest] = []
        for msn in msns.sorted() where !history.removalScheduled.contains(msn) {
            guard let url = history.lastURLs[msn], let entry = history.entries[msn] else { continue }
            history.removalScheduled.insert(msn)
            let required = entry.durationMilliseconds + (history.listedPlaylistDuration[msn] ?? 0)
            let mustStayUntil = removedAfter + required
            let notBefore = max(fetch.received, min(fetch.received + required / 2, mustStayUntil - 1000))
            requests.append(
                SegmentRequest(
                    purpose: .removed, url: url, playlist: history.url, msn: msn, notBefore: notBefore,
                    mustStayUntil: mustStayUntil, removalSeen: fetch.received))
        }
        return requests
    }

    /// Rule 15: the time without a new segment, bounded below by this reload's request time minus the answer that
    /// showed the last new one. A stall is reported once it ends (or at the end of the watch) with its length.
    private mutating func checkFreshness(
        newest: UInt64?, previousNewest: UInt64?, fetch: HTTPFetch, history: inout RenditionHistory
    ) {
        guard history.endList == nil, let target = history.targetDuration else { return }
        checked(.freshness)
        let added = newest.map { newest in previousNewest.map { newest > $0 } ?? true } ?? false
        if added || history.lastAdditionSeen == nil {
            flushStaleness(history: &history)
            if newest != nil { history.lastAdditionSeen = fetch.received }
            return
        }
        guard let since = history.lastAdditionSeen else { return }
        let stale = fetch.sent - since
        history.longestStaleness = max(history.longestStaleness, stale)
        if stale * 2 > Int64(target) * 3000 {
            history.stall = (since: since, until: fetch.sent, msn: newest ?? 0, limit: Int64(target) * 1500)
        }
    }

    /// Reports the stall in progress, if any.
    mutating func flushStaleness(history: inout RenditionHistory) {
        guard let stall = history.stall else { return }
        history.stall = nil
        fail(
            .freshness,
            "\(history.name): no new segment for at least \(Self.seconds(stall.until - stall.since)) "
                + "(limit 1.5 × TD = \(Self.seconds(stall.limit))): MSN \(stall.msn) was the newest from "
                + "\(Self.time(stall.since)) to \(Self.time(stall.until))")
    }

    /// Rules 25, 26, 27: DATERANGE syntax, attributes never changed or dropped, no removal while its START-DATE
    /// maps to a listed segment.
    private mutating func checkDateRanges(
        _ playlist: MediaPlaylist, previous: MediaPlaylist?, name: String, fetch: HTTPFetch
    ) {
        var merged: [String: [String: String]] = [:]
        var order: [String] = []
        for segment in playlist.segments {
            for dateRange in segment.dateRanges {
                dateRangeSeen = true
                checked(.dateRangeSyntax)
                do {
                    try dateRange.validate()
                } catch {
                    fail(.dateRangeSyntax, "\(name): EXT-X-DATERANGE ID=\"\(dateRange.id)\": \(error)")
                }
                if merged[dateRange.id] == nil { order.append(dateRange.id) }
                var attributes = merged[dateRange.id] ?? [:]
                for (attribute, value) in Self.attributes(of: dateRange) {
                    if let earlier = attributes[attribute], earlier != value {
                        fail(
                            .dateRangeImmutable,
                            "\(name): two EXT-X-DATERANGE ID=\"\(dateRange.id)\" give \(attribute)=\(earlier) and "
                                + "\(attribute)=\(value)")
                    }
                    attributes[attribute] = value
                }
                merged[dateRange.id] = attributes
            }
        }
        for id in order {
            checked(.dateRangeImmutable)
            let now = merged[id]!
            guard let known = dateRanges[id] else {
                dateRanges[id] = now
                continue
            }
            for (attribute, value) in now.sorted(by: { $0.key < $1.key }) {
                if let before = known[attribute], before != value {
                    fail(
                        .dateRangeImmutable,
                        "\(name): EXT-X-DATERANGE ID=\"\(id)\" \(attribute) changed from \(before) to \(value) at "
                            + "\(Self.time(fetch.received))")
                }
            }
            for attribute in known.keys.sorted() where now[attribute] == nil {
                fail(
                    .dateRangeImmutable,
                    "\(name): EXT-X-DATERANGE ID=\"\(id)\" dropped \(attribute) at \(Self.time(fetch.received))")
            }
            dateRanges[id] = known.merging(now) { $1 }
        }
        // Rule 27: a date range whose START-DATE falls on a listed segment stays.
        guard let previous, let first = playlist.segments.first?.programDateTime?.millisecondsSince1970 else { return }
        let end = first + playlist.segments.reduce(Int64(0)) { $0 + NumberFormatting.milliseconds($1.duration) }
        for dateRange in previous.segments.flatMap(\.dateRanges) where merged[dateRange.id] == nil {
            let start = dateRange.startDate.millisecondsSince1970
            if start >= first, start < end {
                fail(
                    .dateRangeImmutable,
                    "\(name): EXT-X-DATERANGE ID=\"\(dateRange.id)\" removed at \(Self.time(fetch.received)) while "
                        + "its START-DATE \(dateRange.startDate.formatted) is on a listed segment (rule 27)")
            }
        }
    }

    /// A date range's attributes as written: name -> value.
    static func attributes(of dateRange: DateRange) -> [String: String] {
        var attributes: [String: String] = [:]
        for attribute in DateRangeAttribute.allCases {
            if let value = dateRange[attribute] { attributes[attribute.name] = describe(value) }
        }
        for client in dateRange.clientAttributes { attributes[client.name] = describe(client.value) }
        return attributes
    }

    private static func describe(_ value: AttributeValue) -> String {
        switch value {
        case .quotedString(let text): "\"\(text)\""
        case .hexadecimal(let bytes): "0x" + bytes.map { String($0, radix: 16, uppercase: true) }.joined()
        case .decimal(let number): "\(number)"
        case .enumerated(let text): text
        }
    }

    /// Rules 30 and 33 on a media playlist and against its previous reload.
    private mutating func checkKeysAndDefines(
        _ playlist: MediaPlaylist, previous: MediaPlaylist?, declared: Int?, name: String
    ) {
        checked(.keysAndDefines)
        let importable = Set(multivariant?.definitions.map(\.name) ?? [])
        for violation in playlist.validateDefinesAndKeys(importable: importable, declaredVersion: declared) {
            fail(.keysAndDefines, "\(name): \(violation)")
        }
        if let previous {
            for violation in playlist.validateKeyContinuity(after: previous) {
                fail(.keysAndDefines, "\(name): \(violation)")
            }
        }
    }
}
