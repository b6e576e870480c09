import HLSPlaylist
package import MediaProbe
package import SharedBytes

/// The encoder's multivariant hint as a channel keeps it: the newest valid one, and what happened to hints so far.
package struct MultivariantHintState: Sendable, Hashable {
    /// The newest valid hint (validated and normalized); journaled.
    package var hint: MultivariantHint?
    /// Hints read.
    package var read = 0
    /// Hints refused (invalid or too large).
    package var refused = 0
    /// Hint statements the configuration overrode (the configuration wins).
    package var contradictions = 0
}

extension ChannelState {
    /// Keeps the encoder's multivariant hint, replacing an earlier one; it is applied to renditions as they deliver.
    /// - Returns: what the configuration overrides in it (the configuration wins; counted and returned for the log).
    package mutating func adoptMultivariantHint(_ hint: MultivariantHint) -> [String] {
        var contradictions: [String] = []
        for member in hint.members {
            guard let configured = configuration.renditions.first(where: { $0.name == member.rendition }) else {
                continue
            }
            let stated = member.kind == .audio ? configured.audio : configured.subtitles
            let other = member.kind == .audio ? configured.subtitles : configured.audio
            if let other {
                contradictions.append(
                    "\(member.rendition): the hint says \(member.kind.rawValue), the configuration says group "
                        + "\(other.group)")
            } else if let stated,
                stated.group != member.group || stated.language != member.language
                    || (stated.name ?? member.name) != member.name || stated.isDefault != member.isDefault
            {
                contradictions.append(
                    "\(member.rendition): the hint says group \(member.group) NAME \(member.name), the configuration "
                        + "says group \(stated.group)\(stated.name.map { " NAME \($0)" } ?? "")")
            }
        }
        multivariantHint.hint = hint
        multivariantHint.read += 1
        multivariantHint.contradictions += contradictions.count
        journal.dirty = true
        return contradictions
    }

    /// Counts a refused multivariant hint (the previous one, if any, stays).
    package mutating func refuseMultivariantHint() {
        multivariantHint.refused += 1
    }

    /// Stores an initialization section for a rendition; returns its version.
    package mutating func adoptInitSection(rendition name: String, bytes: SharedBytes, info: InitSectionInfo) -> Int? {
        guard let position = index[name] else { return nil }
        let version = renditions[position].adoptInitSection(bytes: bytes, info: info)
        revisions[name, default: 0] += 1
        return version
    }

    /// The rendition's current initialization section version; nil without one (or without the rendition).
    package func currentInitVersion(_ rendition: String) -> Int? {
        index[rendition].flatMap { renditions[$0].currentInitVersion }
    }

    /// The oldest MSN any rendition still lists or keeps downloadable: the store must keep everything from it on.
    package var oldestKeptMSN: UInt64? {
        renditions.compactMap { $0.window.retained.first?.entry.msn ?? $0.window.entries.first?.msn }.min()
    }
}
