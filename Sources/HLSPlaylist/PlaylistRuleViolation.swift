/// The rules of ../shared/HLS-RULES.md that the EXT-X-DEFINE, EXT-X-KEY, I-frame and part-duration checks apply.
public enum HLSRule: Int, Sendable, Hashable, CaseIterable {
    /// 30: EXT-X-DEFINE: one of NAME/IMPORT/QUERYPARAM, names `[A-Za-z0-9_-]`, IMPORT only in media playlists and
    /// defined by the multivariant playlist, no undefined reference, version 8 (11 with QUERYPARAM).
    case define = 30
    /// 33: EXT-X-KEY / EXT-X-SESSION-KEY: URI unless METHOD=NONE, IV of 128 bits, a KEY never removed while a listed
    /// segment it applies to stays, SESSION-KEY never NONE and matching the KEY tags.
    case key = 33
    /// 36: EXT-X-I-FRAME-STREAM-INF has BANDWIDTH and URI, and its target has EXT-X-I-FRAMES-ONLY.
    case iFrameStream = 36
    /// 38: an EXT-X-PART lasts at most PART-TARGET, and at least 85 % of it unless it is INDEPENDENT=YES, GAP=YES or
    /// the last part of its segment.
    case partDuration = 38
}

/// One broken rule found in a playlist value, with what is wrong in plain words.
public struct PlaylistRuleViolation: Sendable, Hashable, CustomStringConvertible {
    public var rule: HLSRule
    public var message: String

    public init(rule: HLSRule, message: String) {
        self.rule = rule
        self.message = message
    }

    public var description: String { "HLS rule \(rule.rawValue): \(message)" }
}

/// Reading the declared EXT-X-VERSION, which the playlist values do not keep.
public enum PlaylistVersion {
    /// The value of the first `#EXT-X-VERSION:` line of `text`, nil when there is none or it is not a number.
    public static func declared(in text: String) -> Int? {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) where line.hasPrefix("#EXT-X-VERSION:") {
            return Int(line.dropFirst("#EXT-X-VERSION:".count))
        }
        return nil
    }
}

extension EncryptionKey {
    /// Rule 33 on the key alone: AES-128 needs a non-empty URI and, when given, a 16-byte IV.
    func violations(tag: String) -> [PlaylistRuleViolation] {
        guard case .aes128(let uri, let iv) = self else { return [] }
        var found: [PlaylistRuleViolation] = []
        if uri.isEmpty {
            found.append(PlaylistRuleViolation(rule: .key, message: "\(tag) METHOD=AES-128 has an empty URI"))
        }
        if let iv, iv.count != 16 {
            found.append(
                PlaylistRuleViolation(
                    rule: .key, message: "\(tag) IV has \(iv.count) bytes; it must be 128 bits (0x + 32 hex digits)"))
        }
        return found
    }

    /// Whether two keys are the same key for a client: NONE equals no key at all; AES-128 keys by URI and IV.
    static func sameInForce(_ a: EncryptionKey?, _ b: EncryptionKey?) -> Bool {
        (a ?? EncryptionKey.none) == (b ?? EncryptionKey.none)
    }
}

extension VariableDefinition {
    /// The rule 30 checks every form shares: the name's characters, and the version the form needs.
    static func violations(
        _ definitions: [VariableDefinition], declaredVersion: Int?, references: [String]
    ) -> [PlaylistRuleViolation] {
        var found: [PlaylistRuleViolation] = []
        var seen: Set<String> = []
        for definition in definitions {
            if !VariableTable.isValidName(definition.name) {
                found.append(
                    PlaylistRuleViolation(
                        rule: .define,
                        message: "EXT-X-DEFINE name \(AttributeList.quoted(definition.name)) is not [A-Za-z0-9_-]+"))
            }
            if !seen.insert(definition.name).inserted {
                found.append(
                    PlaylistRuleViolation(
                        rule: .define, message: "variable \(definition.name) is defined twice"))
            }
        }
        let needed = definitions.reduce(1) { max($0, $1.minimumVersion) }
        if let declaredVersion, declaredVersion < needed {
            let form = needed == 11 ? "EXT-X-DEFINE with QUERYPARAM" : "EXT-X-DEFINE"
            found.append(
                PlaylistRuleViolation(
                    rule: .define,
                    message: "\(form) needs EXT-X-VERSION \(needed) or more; the playlist declares \(declaredVersion)"))
        }
        var reported: Set<String> = []
        for text in references {
            for name in variableReferences(in: text) where !seen.contains(name) && reported.insert(name).inserted {
                found.append(
                    PlaylistRuleViolation(
                        rule: .define, message: "{$\(name)} in \(text) refers to no EXT-X-DEFINE of the playlist"))
            }
        }
        return found
    }

    /// The names of the `{$name}` references in `text`, in order.
    static func variableReferences(in text: String) -> [String] {
        guard text.contains("{$") else { return [] }
        return VariableTable.references(in: Array(text.utf8)).map(\.name)
    }
}

extension MediaPlaylist {
    /// The EXT-X-KEY in force at each segment, in order: the last ``MediaSegment/key`` at or above it; nil when no
    /// KEY is stated above it.
    public var keysInForce: [EncryptionKey?] {
        var current: EncryptionKey?
        return segments.map { segment in
            if let key = segment.key { current = key }
            return current
        }
    }

    /// HLS rules 30 and 33 on one media playlist.
    ///
    /// - Rule 30: definition names `[A-Za-z0-9_-]+`, each once; every IMPORT names a variable in `importable` (the
    ///   names the multivariant playlist defines); every `{$name}` left in a segment, EXT-X-MAP or EXT-X-KEY URI names
    ///   a definition; `declaredVersion` (see ``PlaylistVersion/declared(in:)``), when given, is at least 8, or 11
    ///   with QUERYPARAM.
    /// - Rule 33: every AES-128 key has a URI and, when given, a 16-byte IV.
    ///
    /// The parser already refuses some of these (a reference to an undefined name, an IV of the wrong length); values
    /// built in code are checked here too.
    /// - Returns: the violations in playlist order; empty when none.
    public func validateDefinesAndKeys(importable: Set<String>, declaredVersion: Int? = nil) -> [PlaylistRuleViolation]
    {
        var references: [String] = []
        for segment in segments {
            references.append(segment.uri)
            if let map = segment.map { references.append(map.uri) }
            if case .aes128(let uri, _) = segment.key { references.append(uri) }
        }
        var found = VariableDefinition.violations(
            definitions, declaredVersion: declaredVersion, references: references)
        for case .import(let name) in definitions where !importable.contains(name) {
            found.append(
                PlaylistRuleViolation(
                    rule: .define,
                    message: "EXT-X-DEFINE:IMPORT=\(AttributeList.quoted(name)) names no variable of the multivariant "
                        + "playlist"))
        }
        var reported: Set<EncryptionKey> = []
        for case let key? in segments.map(\.key) where reported.insert(key).inserted {
            found += key.violations(tag: "EXT-X-KEY")
        }
        return found
    }

    /// HLS rule 33 across two snapshots of one playlist: a KEY tag is never removed while a segment it applies to is
    /// listed, so every media sequence number listed in both has the same key in force in both (no KEY and
    /// METHOD=NONE count as the same).
    /// - Parameter previous: the snapshot fetched before this one.
    /// - Returns: one violation per media sequence number whose key differs.
    public func validateKeyContinuity(after previous: MediaPlaylist) -> [PlaylistRuleViolation] {
        let previousKeys = previous.keysInForce
        let currentKeys = keysInForce
        var found: [PlaylistRuleViolation] = []
        for (index, key) in currentKeys.enumerated() {
            let msn = mediaSequence + UInt64(index)
            guard msn >= previous.mediaSequence else { continue }
            let previousIndex = Int(msn - previous.mediaSequence)
            guard previousIndex < previousKeys.count else { break }
            let before = previousKeys[previousIndex]
            if !EncryptionKey.sameInForce(before, key) {
                found.append(
                    PlaylistRuleViolation(
                        rule: .key,
                        message: "segment \(msn) (\(segments[index].uri)) had key "
                            + "\(Self.describe(before)) and now has \(Self.describe(key)): the KEY that applies to it "
                            + "was removed or changed"))
            }
        }
        return found
    }

    /// HLS rule 38 on the listed parts (RFC 8216bis 4.4.4.9): none lasts more than PART-TARGET, and each that is
    /// neither INDEPENDENT=YES, nor GAP=YES, nor the last part of a listed segment lasts at least 85 % of it. The
    /// parts of the segment in progress are none of them the last (its last is listed with the segment). Durations
    /// are compared as rendered, three decimals: half a millisecond of rounding is allowed either way.
    /// - Returns: one violation per part out of bounds; empty when the playlist has no PART-TARGET.
    public func validatePartDurations() -> [PlaylistRuleViolation] {
        guard let target = partTarget else { return [] }
        let rounding = 0.0005
        var found: [PlaylistRuleViolation] = []
        var listed = segments.map { (segment: $0, complete: true) }
        if let segmentInProgress { listed.append((segmentInProgress, false)) }
        for (segment, complete) in listed {
            for (index, part) in segment.parts.enumerated() {
                let isLast = complete && index == segment.parts.count - 1
                if part.duration > target + rounding {
                    found.append(
                        PlaylistRuleViolation(
                            rule: .partDuration,
                            message: "part \(part.uri) lasts \(part.duration) s, more than PART-TARGET \(target) s"))
                } else if !part.independent, !part.gap, !isLast, part.duration < 0.85 * target - rounding {
                    found.append(
                        PlaylistRuleViolation(
                            rule: .partDuration,
                            message: "part \(part.uri) lasts \(part.duration) s, less than 85 % of PART-TARGET "
                                + "\(target) s, and is neither INDEPENDENT, nor GAP, nor the last of its segment"))
                }
            }
        }
        return found
    }

    private static func describe(_ key: EncryptionKey?) -> String {
        switch key {
        case nil, .some(.none): return "METHOD=NONE"
        case .some(let key): return key.renderedAttributes
        }
    }
}

extension MultivariantPlaylist {
    /// HLS rule 30 on a multivariant playlist: no IMPORT (it has nothing to import from), names `[A-Za-z0-9_-]+`,
    /// each once, every `{$name}` left in a variant, rendition, I-frame stream or session key URI defined, and
    /// `declaredVersion`, when given, at least 8 (11 with QUERYPARAM).
    public func validateDefines(declaredVersion: Int? = nil) -> [PlaylistRuleViolation] {
        var references = variants.map(\.uri) + renditions.compactMap(\.uri) + iFrameStreams.map(\.uri)
        for case .aes128(let uri, _) in sessionKeys { references.append(uri) }
        var found = VariableDefinition.violations(
            definitions, declaredVersion: declaredVersion, references: references)
        for case .import(let name) in definitions {
            found.append(
                PlaylistRuleViolation(
                    rule: .define,
                    message: "EXT-X-DEFINE:IMPORT=\(AttributeList.quoted(name)) is only allowed in media playlists"))
        }
        return found
    }

    /// HLS rule 33 on EXT-X-SESSION-KEY: never METHOD=NONE, a URI and a 16-byte IV when given, and each equal in
    /// METHOD and URI to some EXT-X-KEY of the media playlists.
    /// - Parameters:
    ///   - mediaKeys: the EXT-X-KEY values of the media playlists, with URIs in the same form `resolve` gives (for
    ///     instance absolute, each resolved against its media playlist's URL).
    ///   - resolve: turns a SESSION-KEY URI as written into that form (for instance resolves it against the
    ///     multivariant playlist's URL); identity by default.
    public func validateSessionKeys(
        against mediaKeys: [EncryptionKey], resolve: (String) -> String = { $0 }
    ) -> [PlaylistRuleViolation] {
        var mediaURIs: Set<String> = []
        for case .aes128(let uri, _) in mediaKeys { mediaURIs.insert(uri) }
        var found: [PlaylistRuleViolation] = []
        for key in sessionKeys {
            guard case .aes128(let uri, _) = key else {
                found.append(PlaylistRuleViolation(rule: .key, message: "EXT-X-SESSION-KEY has METHOD=NONE"))
                continue
            }
            found += key.violations(tag: "EXT-X-SESSION-KEY")
            let resolved = resolve(uri)
            if !mediaURIs.contains(resolved) {
                found.append(
                    PlaylistRuleViolation(
                        rule: .key,
                        message: "EXT-X-SESSION-KEY URI \(resolved) matches no EXT-X-KEY of the media playlists"))
            }
        }
        return found
    }

    /// HLS rule 36: every EXT-X-I-FRAME-STREAM-INF has a positive BANDWIDTH and a URI, and the playlist at that URI
    /// has EXT-X-I-FRAMES-ONLY.
    /// - Parameter targets: the I-frame playlists by URI as written in this playlist; a missing one is a violation.
    public func validateIFrameStreams(targets: [String: MediaPlaylist]) -> [PlaylistRuleViolation] {
        var found: [PlaylistRuleViolation] = []
        for stream in iFrameStreams {
            if stream.bandwidth <= 0 {
                found.append(
                    PlaylistRuleViolation(
                        rule: .iFrameStream,
                        message: "EXT-X-I-FRAME-STREAM-INF \(stream.uri) has BANDWIDTH \(stream.bandwidth)"))
            }
            guard !stream.uri.isEmpty else {
                found.append(PlaylistRuleViolation(rule: .iFrameStream, message: "EXT-X-I-FRAME-STREAM-INF has no URI"))
                continue
            }
            guard let target = targets[stream.uri] else {
                found.append(
                    PlaylistRuleViolation(
                        rule: .iFrameStream, message: "I-frame playlist \(stream.uri) was not given to check"))
                continue
            }
            if !target.iFramesOnly {
                found.append(
                    PlaylistRuleViolation(
                        rule: .iFrameStream, message: "I-frame playlist \(stream.uri) lacks EXT-X-I-FRAMES-ONLY"))
            }
        }
        return found
    }
}
