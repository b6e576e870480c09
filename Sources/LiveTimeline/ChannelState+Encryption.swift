import HLSPlaylist
import SharedBytes

/// A channel's AES-128 encryption as its state keeps it: the key secret and the key schedule (both durable in the
/// key journal), and where keys are fetched.
package struct ChannelEncryption: Sendable, Hashable {
    /// The 32-byte secret every period key is derived from.
    package var secret: [UInt8]
    /// Which MSNs are encrypted under which key period.
    package var schedule: KeySchedule
    /// `{channel}`/`{period}` template of the key URI; nil: the origin's own `key-{period}.key`.
    package var keyURITemplate: String?
    /// The key file was unreadable at start and a new secret was made (status `rekeyed`).
    package var rekeyed: Bool

    package init(secret: [UInt8], schedule: KeySchedule, keyURITemplate: String?, rekeyed: Bool = false) {
        self.secret = secret
        self.schedule = schedule
        self.keyURITemplate = keyURITemplate
        self.rekeyed = rekeyed
    }

    /// The key URI of `period` for channel `channel`: the template filled in, else `{prefix}key-{period}.key`
    /// (`prefix` is `../` from a media playlist, empty from the multivariant).
    package func keyURI(period: UInt64, channel: String, relativePrefix: String) -> String {
        guard let template = keyURITemplate else { return "\(relativePrefix)key-\(period).key" }
        return
            template
            .replacing("{channel}", with: channel)
            .replacing("{period}", with: String(period))
    }
}

extension ChannelState {
    /// The lowest MSN no rendition has published: a schedule change takes effect from it, so no listed segment
    /// changes its key.
    package var lowestUnpublishedMSN: UInt64 {
        let published = renditions.compactMap { $0.window.lastMSN }.max().map { $0 + 1 } ?? slotClock.firstMSN
        return max(published, slotClock.firstMSN, encryption?.schedule.spans.last?.fromMSN ?? 0)
    }

    /// The newest MSN any rendition lists.
    package var newestPublishedMSN: UInt64? { renditions.compactMap { $0.window.lastMSN }.max() }

    /// The PKCS7 padding AES-128 adds to a segment of `count` bytes at `msn` (`16 - count % 16`), 0 when the MSN is
    /// clear: BANDWIDTH and AVERAGE-BANDWIDTH count the bytes actually served.
    package func cipherPadding(_ count: Int, msn: UInt64) -> Int {
        guard encryption?.schedule.period(of: msn) != nil else { return 0 }
        return 16 - count % 16
    }

    /// Adds the padding of the restored encrypted segments to the restored statistics (restore counts plaintext).
    package mutating func padRestoredStatistics() {
        for position in renditions.indices {
            let rendition = renditions[position]
            var statistics = rendition.statistics
            for entry in rendition.window.retained.map(\.entry) + rendition.window.entries + rendition.held {
                guard let bytes = entry.bytes, entry.durationMilliseconds > 0 else { continue }
                let padding = cipherPadding(bytes.count, msn: entry.msn)
                guard padding > 0 else { continue }
                statistics.totalBytes += Int64(padding)
                statistics.peakBitrate = max(
                    statistics.peakBitrate,
                    Int(Int64(bytes.count + padding) * 8 * 1000 / entry.durationMilliseconds))
                if let end = entry.iFrameRangeEnd {
                    let iFramePadding = cipherPadding(end, msn: entry.msn)
                    statistics.iFrameTotalBytes += Int64(iFramePadding)
                    statistics.iFramePeakBitrate = max(
                        statistics.iFramePeakBitrate,
                        Int(Int64(end + iFramePadding) * 8 * 1000 / entry.durationMilliseconds))
                }
            }
            renditions[position].statistics = statistics
        }
    }

    /// Installs a new encryption state (the caller journaled it first) and marks every rendition for re-rendering.
    package mutating func adoptEncryption(_ encryption: ChannelEncryption?) {
        self.encryption = encryption
        for rendition in renditions { revisions[rendition.name, default: 0] += 1 }
    }
}
