import HLSPackaging
import HLSPlaylist
import LiveTimeline
import MediaProbe
import OriginCore

/// Whether this origin and one peer publish the same entries for a channel, as last checked.
public struct PeerAgreement: Sendable, Hashable, Codable {
    /// The peer's base URL as configured.
    public let peer: String
    /// The rendition compared (one per check, in turn).
    public let rendition: String
    /// Every MSN both listed had the same URI, EXTINF, PDT, GAP and DISCONTINUITY.
    public let agrees: Bool
    /// The newest MSN both listed; nil when none (the peer is behind, ahead by a window, or unreachable).
    public let newestCommonMSN: UInt64?
    /// The peer's newest MSN and its PDT (ms since the epoch), as read.
    public let peerNewestMSN: UInt64?
    public let peerNewestProgramDateTimeMilliseconds: Int64?
    /// The first difference found, or why the peer could not be compared.
    public let difference: String?
    /// Segments of this channel repaired from the peer since the start.
    public let repairedSegments: Int
    /// When checked (shared clock, ms).
    public let checkedAtMilliseconds: Int64
}

extension PeerRepairer {
    /// Compares one rendition of every repairable channel (in turn) with each peer's playlist.
    public func checkAgreement() async {
        let now = origin.clock.nowMilliseconds()
        for channel in origin.allChannels where Self.repairable(channel.configuration) {
            let snapshot = channel.snapshot
            let media = snapshot.renditions.values.filter { rendition in
                rendition.playlist != nil && !rendition.entries.contains { $0.container == .webVTT }
            }.map(\.name).sorted()
            guard !media.isEmpty else { continue }
            let turn = nextTurn(channel: channel.configuration.name)
            let rendition = media[turn % media.count]
            guard let ours = snapshot.renditions[rendition] else { continue }
            for (index, peer) in peers.enumerated() {
                let agreement = await compare(
                    ours, channel: channel.configuration.name, peer: peer, peerIndex: index, now: now)
                record(agreement, channel: channel.configuration.name, peerIndex: index)
            }
        }
    }

    private func compare(
        _ ours: RenditionSnapshot, channel: String, peer: PeerURL, peerIndex: Int, now: Int64
    ) async -> PeerAgreement {
        let repaired = repaired(channel: channel, peerIndex: peerIndex)
        func failed(_ reason: String) -> PeerAgreement {
            PeerAgreement(
                peer: peer.description, rendition: ours.name, agrees: false, newestCommonMSN: nil, peerNewestMSN: nil,
                peerNewestProgramDateTimeMilliseconds: nil, difference: reason, repairedSegments: repaired,
                checkedAtMilliseconds: now)
        }
        let url = peer.with(path: "/live/\(channel)/\(ours.name)/index.m3u8")
        let playlist: MediaPlaylist
        do {
            // A connection that fails once (the peer closing an idle socket, a reset) is tried again before the
            // peer is reported as not comparable.
            let answer: PeerResponse
            do {
                answer = try await fetcher.get(url, timeout: requestTimeout, limit: 1 << 20)
            } catch {
                answer = try await fetcher.get(url, timeout: requestTimeout, limit: 1 << 20)
            }
            guard answer.status == 200 else { return failed("\(url): status \(answer.status)") }
            playlist = try MediaPlaylist.parse(String(decoding: answer.body, as: UTF8.self))
        } catch {
            return failed("\(url): \(error)")
        }
        let entries = Dictionary(ours.entries.map { ($0.msn, $0) }, uniquingKeysWith: { first, _ in first })
        var newestCommon: UInt64?
        var difference: String?
        for (offset, segment) in playlist.segments.enumerated() {
            let msn = playlist.mediaSequence + UInt64(offset)
            guard let entry = entries[msn] else { continue }
            newestCommon = msn
            guard difference == nil else { continue }
            let peerPDT = segment.programDateTime?.millisecondsSince1970
            if peerPDT != entry.programDateTimeMilliseconds {
                difference =
                    "msn \(msn): PDT \(entry.programDateTimeMilliseconds) here, \(peerPDT.map(String.init) ?? "none") on the peer"
            } else if segment.gap != entry.isGap {
                difference =
                    "msn \(msn): \(entry.isGap ? "GAP" : "segment") here, \(segment.gap ? "GAP" : "segment") on the peer"
            } else if segment.discontinuity != entry.discontinuity {
                difference = "msn \(msn): DISCONTINUITY \(entry.discontinuity ? "here" : "on the peer") only"
            } else if NumberFormatting.milliseconds(segment.duration) != entry.durationMilliseconds {
                difference =
                    "msn \(msn): EXTINF \(entry.durationMilliseconds) ms here, \(segment.duration) s on the peer"
            }
        }
        let peerNewest =
            playlist.segments.isEmpty
            ? nil : playlist.mediaSequence + UInt64(playlist.segments.count - 1)
        if newestCommon == nil, difference == nil { difference = "no MSN listed by both" }
        return PeerAgreement(
            peer: peer.description, rendition: ours.name, agrees: difference == nil, newestCommonMSN: newestCommon,
            peerNewestMSN: peerNewest,
            peerNewestProgramDateTimeMilliseconds: playlist.segments.last?.programDateTime?.millisecondsSince1970,
            difference: difference, repairedSegments: repaired, checkedAtMilliseconds: now)
    }
}
