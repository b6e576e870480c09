import HLSCrypto
import HLSPackaging
public import LiveTimeline
import Logging
import MediaProbe
import Persistence
public import SharedBytes
import Synchronization

/// A memoized ciphertext: one rendition's MSN, whole segment or I-frame range.
struct CiphertextKey: Hashable {
    let rendition: String
    let msn: UInt64
    let iFrame: Bool
}

/// The encrypted forms of a channel's segments, bounded by bytes: over the bound, the lowest MSNs go first (they
/// are recomputed on demand, with the same bytes). Kept behind `Channel.ciphertexts`, a leaf lock.
struct CiphertextCache {
    /// The bytes and the key period they were encrypted under.
    var entries: [CiphertextKey: (period: UInt64, bytes: SharedBytes)] = [:]
    var bytes = 0
    let limit: Int
    /// Per rendition: the oldest MSN it listed or retained at the last publish (below it, live ciphertexts went).
    var floors: [String: UInt64] = [:]

    init(limit: Int) { self.limit = limit }

    func lookup(_ key: CiphertextKey, period: UInt64) -> SharedBytes? {
        guard let found = entries[key], found.period == period else { return nil }
        return found.bytes
    }

    mutating func insert(_ ciphertext: SharedBytes, for key: CiphertextKey, period: UInt64) {
        if let old = entries.updateValue((period, ciphertext), forKey: key) { bytes -= old.bytes.count }
        bytes += ciphertext.count
        guard bytes > limit else { return }
        for old in entries.keys.sorted(by: { $0.msn < $1.msn }) where bytes > limit {
            if let removed = entries.removeValue(forKey: old) { bytes -= removed.bytes.count }
        }
    }

    /// Drops the ciphertexts of MSNs that left the renditions' retention since the last publish (the disk tier's,
    /// further down, stay until the byte bound evicts them).
    mutating func prune(to snapshot: ChannelSnapshot) {
        var dropped: [String: Range<UInt64>] = [:]
        for rendition in snapshot.renditions.values {
            guard let floor = rendition.entries.first?.msn else { continue }
            let previous = floors.updateValue(floor, forKey: rendition.name) ?? floor
            if previous < floor { dropped[rendition.name] = previous..<floor }
        }
        guard !dropped.isEmpty, !entries.isEmpty else { return }
        for key in entries.keys where dropped[key.rendition]?.contains(key.msn) == true {
            if let removed = entries.removeValue(forKey: key) { bytes -= removed.bytes.count }
        }
    }
}

/// Why an encryption change was not applied.
public struct EncryptionChangeError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

extension Channel {
    /// Bytes of ciphertext a channel memoizes by default.
    public static let defaultCiphertextCacheBytes = 256 << 20

    /// Reads the channel's key file and applies the configuration from the lowest unpublished MSN of `state`
    /// (which holds the restored window): the secret and schedule continue from the file; a channel newly
    /// configured gets a new secret; a corrupt file (read, and provably unusable) is moved aside and the channel
    /// re-keys (a new secret, the current schedule from the next MSN above every stored one), logged. A file that
    /// cannot be read is never replaced: `ChannelFactory` does not start the channel; reached here anyway, the
    /// channel serves under a new secret kept in memory only. The journal is written before the first publish when
    /// anything changed.
    /// - Returns: a note for the channel status when the key file was corrupt, unreadable or could not be written.
    static func startEncryption(
        _ state: inout ChannelState, configuration: ChannelConfiguration, keys: KeyJournal?,
        loaded: Result<KeyJournalRecord?, JournalError>?, logger: Logger
    ) -> String? {
        let settings = configuration.encryption
        let next = state.lowestUnpublishedMSN
        var note: String?
        var encryption: ChannelEncryption?
        switch loaded {
        case .success(let record?):
            encryption = ChannelEncryption(
                secret: record.secret, schedule: record.schedule, keyURITemplate: settings?.keyURITemplate)
        case .failure(let error):
            // The stored MSNs keep their URLs but get new ciphertext: loud.
            var schedule = KeySchedule()
            if let every = settings.map({ UInt64(max($0.rotateEvery, 1)) }) {
                schedule = KeySchedule(spans: [.init(fromMSN: 0, rotateEvery: every, firstPeriod: 0)])
                if next > 0 {
                    let first = (schedule.highestPeriod(below: next) ?? 0) + 1
                    schedule = KeySchedule(spans: [
                        .init(fromMSN: 0, rotateEvery: every, firstPeriod: 0),
                        .init(fromMSN: next, rotateEvery: every, firstPeriod: first),
                    ])
                }
            }
            encryption = ChannelEncryption(
                secret: ChannelKeySecret.generate().bytes, schedule: schedule,
                keyURITemplate: settings?.keyURITemplate, rekeyed: true)
            if error.unreadable {
                note = "key file unreadable (\(error.message)): serving under a new secret kept in memory only"
                logger.error(
                    "key file unreadable: not replaced, new secret in memory only",
                    metadata: ["reason": "\(error.message)"])
                state.adoptEncryption(encryption!)
                state.padRestoredStatistics()
                return note
            }
            var aside = "not moved aside"
            if let keys {
                do {
                    aside = "moved to \(try keys.moveAside(channel: configuration.name))"
                } catch {
                    // Still in place: never overwritten; the new secret stays in memory.
                    note = "key file corrupt (\(error.message)) and could not be moved aside (\(error))"
                    logger.error("corrupt key file could not be moved aside", metadata: ["reason": "\(error)"])
                    state.adoptEncryption(encryption!)
                    state.padRestoredStatistics()
                    return note
                }
            }
            note = "key file corrupt (\(error.message), \(aside)): re-keyed with a new secret from msn \(next)"
            logger.error(
                "key file corrupt: moved aside, channel re-keyed, stored segments get new ciphertext",
                metadata: ["reason": "\(error.message)", "hls.msn": "\(next)", "aside": "\(aside)"])
        case .success(nil), nil:
            if settings != nil {
                encryption = ChannelEncryption(
                    secret: ChannelKeySecret.generate().bytes, schedule: KeySchedule(),
                    keyURITemplate: settings?.keyURITemplate)
            }
        }
        guard var encryption else { return note }
        let before = loaded.flatMap { try? $0.get() }
        encryption.schedule.change(rotateEvery: settings.map { UInt64(max($0.rotateEvery, 1)) }, fromMSN: next)
        if let keys, before.map({ $0.secret != encryption.secret || $0.schedule != encryption.schedule }) ?? true {
            do {
                try keys.write(
                    KeyJournalRecord(secret: encryption.secret, schedule: encryption.schedule),
                    channel: configuration.name)
            } catch {
                // Without a durable secret a restart would change every URL's bytes: stay as the file says.
                logger.error("key file write failed", metadata: ["reason": "\(error)"])
                let failed = "key file write failed (\(error)): encryption settings not applied"
                note = [note, failed].compactMap { $0 }.joined(separator: "; ")
                if let before {
                    encryption.schedule = before.schedule
                    encryption.secret = before.secret
                } else if case .failure = loaded {
                    // Re-keyed but not durable: serve what was decided; the next start re-keys again.
                } else {
                    return note
                }
            }
        }
        state.adoptEncryption(encryption)
        state.padRestoredStatistics()
        return note
    }

    /// Turns encryption on, off, or to another rotation while the channel runs: the schedule changes from the
    /// lowest MSN no rendition has published, the key file is written before the publish that lists it, and every
    /// listed MSN keeps its key.
    /// - Throws: when the key file cannot be written; the previous schedule stays.
    public func changeEncryption(_ settings: EncryptionConfiguration?) throws(EncryptionChangeError) {
        let now = clock.nowMilliseconds()
        let changed = try state.withLock { state throws(EncryptionChangeError) -> Bool in
            var encryption =
                state.encryption
                ?? ChannelEncryption(
                    secret: ChannelKeySecret.generate().bytes, schedule: KeySchedule(), keyURITemplate: nil)
            let before = encryption
            encryption.keyURITemplate = settings?.keyURITemplate ?? (settings == nil ? before.keyURITemplate : nil)
            encryption.schedule.change(
                rotateEvery: settings.map { UInt64(max($0.rotateEvery, 1)) }, fromMSN: state.lowestUnpublishedMSN)
            guard encryption != before, state.encryption != nil || !encryption.schedule.spans.isEmpty else {
                return false
            }
            if let keyJournal {
                do {
                    try keyJournal.write(
                        KeyJournalRecord(secret: encryption.secret, schedule: encryption.schedule), channel: name)
                } catch {
                    throw EncryptionChangeError(message: "key file write failed: \(error)")
                }
            }
            state.adoptEncryption(encryption)
            publish(&state, nowMilliseconds: now)
            return true
        }
        if changed {
            logger.notice(
                "encryption changed",
                metadata: ["rotateEvery": "\(settings.map { String($0.rotateEvery) } ?? "off")"])
        }
    }

    /// The AES-128 key of `period`, while some published MSN uses it; nil for a clear channel or a period not in
    /// use yet.
    public func periodKey(_ period: UInt64) -> [UInt8]? {
        guard let encryption = snapshot.encryption, let highest = encryption.highestPeriod, period <= highest,
            let secret = try? ChannelKeySecret(bytes: encryption.secret)
        else { return nil }
        return SegmentCipher.periodKey(secret: secret, channel: name, period: period)
    }

    /// The encrypted form of segment (or GAP filler) `msn` of `rendition` whose bytes are `plaintext`: AES-128-CBC
    /// under the key of the MSN's period, IV = MSN, memoized; nil when the MSN is clear (serve the plaintext).
    /// Deterministic: the same MSN gives the same bytes in every snapshot and after a restart.
    public func ciphertext(rendition: String, msn: UInt64, plaintext: SharedBytes) -> SharedBytes? {
        encrypted(CiphertextKey(rendition: rendition, msn: msn, iFrame: false)) { plaintext }
    }

    /// The encrypted I-frame resource of segment `msn`: its bytes `[0, end of its first keyframe)` encrypted on
    /// their own with the segment's key and IV. Nil when the MSN is clear (see ``iFrameBytes(rendition:msn:)``),
    /// unknown, a GAP, or does not start with a keyframe. Memoized with the segments' ciphertexts.
    public func iFrameCiphertext(rendition: String, msn: UInt64) -> SharedBytes? {
        encrypted(CiphertextKey(rendition: rendition, msn: msn, iFrame: true)) {
            iFrameBytes(rendition: rendition, msn: msn)
        }
    }

    /// The plaintext of segment `msn`'s I-frame resource: `[0, end of its first keyframe)` (`WindowEntry
    /// .iFrameRangeEnd`, or probed from a stored segment's bytes); nil when the MSN is unknown, a GAP, or does not
    /// start with a keyframe.
    public func iFrameBytes(rendition: String, msn: UInt64) -> SharedBytes? {
        guard let published = snapshot.renditions[rendition] else { return nil }
        let entry = published.entry(msn: msn)
        guard let bytes = entry?.bytes ?? storedSegmentBytes(rendition: rendition, msn: msn) else { return nil }
        // Listed and retained entries know their range; a stored segment is probed.
        let end =
            entry.map(\.iFrameRangeEnd)
            ?? bytes.withUnsafeBytes { raw in (try? MediaProbe.probeSegment(raw))?.iFrameRangeEnd }
        guard let end, end > 0, end <= bytes.count else { return nil }
        return bytes.withUnsafeBytes { SharedBytes(copying: UnsafeRawBufferPointer(rebasing: $0.prefix(end))) }
    }

    /// A stored segment's plaintext, read from its chunk file when it was checked before.
    public func storedSegmentBytes(rendition: String, msn: UInt64) -> SharedBytes? {
        guard let answer = storedSegment(rendition: rendition, msn: msn) else { return nil }
        switch answer.body {
        case .bytes(let bytes): return bytes
        case .file:
            guard let (_, bytes) = try? store?.segment(rendition: rendition, msn: msn) else { return nil }
            return bytes
        }
    }

    private func encrypted(_ key: CiphertextKey, plaintext: () -> SharedBytes?) -> SharedBytes? {
        guard let encryption = snapshot.encryption, let period = encryption.period(of: key.msn) else { return nil }
        if let found = ciphertexts.withLock({ $0.lookup(key, period: period) }) { return found }
        guard let plaintext = plaintext(), let secret = try? ChannelKeySecret(bytes: encryption.secret) else {
            return nil
        }
        let periodKey = SegmentCipher.periodKey(secret: secret, channel: name, period: period)
        let ciphertext = plaintext.withUnsafeBytes { SegmentCipher.encrypt($0, key: periodKey, msn: key.msn) }
        ciphertexts.withLock { $0.insert(ciphertext, for: key, period: period) }
        return ciphertext
    }

    /// Encrypts an accepted segment on the pushing thread, after the state lock is released, so the first viewer
    /// does not wait for it.
    func encryptAccepted(rendition: String, msn: UInt64, bytes: SharedBytes) {
        guard snapshot.encryption?.period(of: msn) != nil else { return }
        _ = ciphertext(rendition: rendition, msn: msn, plaintext: bytes)
    }

    /// Memoized ciphertexts and their bytes (tests check the bound and the pruning).
    public var ciphertextCacheUsage: (count: Int, bytes: Int) {
        ciphertexts.withLock { ($0.entries.count, $0.bytes) }
    }

    /// The encryption part of the status; nil for a channel that never encrypted.
    func encryptionStatus() -> EncryptionStatus? {
        guard let encryption = snapshot.encryption else { return nil }
        let edge = encryption.schedule.spans.last
        return EncryptionStatus(
            rotateEvery: edge?.rotateEvery, currentPeriod: encryption.currentPeriod, since: edge?.fromMSN,
            state: encryption.rekeyed ? "rekeyed" : edge?.rotateEvery == nil ? "clear" : "active")
    }
}
