/// RFC 3986 syntax checks for URIs a client hands the origin to put in a playlist (an interstitial's X-ASSET-URI or
/// X-ASSET-LIST): a URI-reference (section 4.1: an absolute URI or a relative reference) made only of the characters
/// the grammar allows, percent-encodings whole, a scheme where one is given, an authority's host a valid IP literal,
/// IPv4 address or registered name, its port digits. Anything else (non-ASCII text, spaces, a `%` without two hex
/// digits, a second `#`, `|`, `{}`) is not a URI and is refused rather than written into a playlist for players to
/// trip over. The admin API's description says the same with JSON Schema's `uri-reference` format.
public enum URIReference {
    /// Whether `text` is an RFC 3986 URI-reference (the empty string is one: the same document).
    public static func isValid(_ text: String) -> Bool {
        parse(Array(text.utf8)) != nil
    }

    /// Whether `text` is an RFC 3986 URI with a scheme (section 3, "absolute" as JSON Schema's `uri` format means).
    public static func isAbsolute(_ text: String) -> Bool {
        parse(Array(text.utf8)) == true
    }

    /// nil if `bytes` is no URI-reference; else whether it has a scheme.
    private static func parse(_ bytes: [UInt8]) -> Bool? {
        var rest = bytes[...]
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) {
            guard allQueryOrFragment(rest[(hash + 1)...]) else { return nil }
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: UInt8(ascii: "?")) {
            guard allQueryOrFragment(rest[(question + 1)...]) else { return nil }
            rest = rest[..<question]
        }
        // A scheme is what precedes the first ':' when no '/' comes before it; a relative reference's first segment
        // may not hold a ':' at all (path-noscheme), so such a prefix that is no scheme is no URI-reference.
        var hasScheme = false
        if let colon = rest.firstIndex(of: UInt8(ascii: ":")),
            !rest[..<colon].contains(UInt8(ascii: "/"))
        {
            guard isScheme(rest[..<colon]) else { return nil }
            hasScheme = true
            rest = rest[(colon + 1)...]
        }
        if rest.starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) {
            let afterSlashes = rest.index(rest.startIndex, offsetBy: 2)
            let authorityEnd = rest[afterSlashes...].firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
            guard isAuthority(rest[afterSlashes..<authorityEnd]) else { return nil }
            rest = rest[authorityEnd...]
        }
        // path-abempty, path-absolute, path-rootless, path-noscheme or path-empty: pchars and slashes.
        guard allMatch(rest, { isPathCharacter($0) || $0 == UInt8(ascii: "/") }) else { return nil }
        return hasScheme
    }

    /// `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    private static func isScheme(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let first = bytes.first, isAlpha(first) else { return false }
        return bytes.dropFirst().allSatisfy {
            isAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
        }
    }

    /// `[ userinfo "@" ] host [ ":" port ]`.
    private static func isAuthority(_ bytes: ArraySlice<UInt8>) -> Bool {
        var hostAndPort = bytes
        if let at = bytes.firstIndex(of: UInt8(ascii: "@")) {
            guard allMatch(bytes[..<at], { isUnreservedOrSubDelimiter($0) || $0 == UInt8(ascii: ":") }) else {
                return false
            }
            hostAndPort = bytes[(at + 1)...]
        }
        var port = hostAndPort[hostAndPort.endIndex...]
        if hostAndPort.first == UInt8(ascii: "[") {
            guard let close = hostAndPort.firstIndex(of: UInt8(ascii: "]")),
                isIPLiteral(hostAndPort[(hostAndPort.startIndex + 1)..<close])
            else { return false }
            let after = hostAndPort[(close + 1)...]
            if let first = after.first {
                guard first == UInt8(ascii: ":") else { return false }
                port = after.dropFirst()
            }
        } else {
            var host = hostAndPort
            if let colon = hostAndPort.firstIndex(of: UInt8(ascii: ":")) {
                host = hostAndPort[..<colon]
                port = hostAndPort[(colon + 1)...]
            }
            // reg-name (an IPv4 address is one too).
            guard allMatch(host, isUnreservedOrSubDelimiter) else { return false }
        }
        return port.allSatisfy(isDigit)
    }

    /// The inside of `[...]`: an IPv6 address or `"v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )`.
    private static func isIPLiteral(_ bytes: ArraySlice<UInt8>) -> Bool {
        if let first = bytes.first, first == UInt8(ascii: "v") || first == UInt8(ascii: "V") {
            let body = bytes.dropFirst()
            guard let dot = body.firstIndex(of: UInt8(ascii: ".")), dot > body.startIndex,
                body[..<dot].allSatisfy(isHexDigit)
            else { return false }
            let tail = body[(dot + 1)...]
            return !tail.isEmpty
                && tail.allSatisfy { isUnreserved($0) || isSubDelimiter($0) || $0 == UInt8(ascii: ":") }
        }
        return isIPv6(bytes)
    }

    /// RFC 3986's IPv6address: eight 16-bit groups of 1-4 hex digits (the last two may be an IPv4 address), one
    /// `::` standing for one group or more.
    private static func isIPv6(_ bytes: ArraySlice<UInt8>) -> Bool {
        let colon = UInt8(ascii: ":")
        var doubleColon: Int?
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            if bytes[index] == colon, bytes[index + 1] == colon {
                guard doubleColon == nil else { return false }
                doubleColon = index
                index += 2
                continue
            }
            index += 1
        }
        /// The groups `part` holds (an IPv4 address at the end of the address counting two), nil if malformed.
        func groups(_ part: ArraySlice<UInt8>, last: Bool) -> Int? {
            if part.isEmpty { return 0 }
            let pieces = part.split(separator: colon, omittingEmptySubsequences: false)
            var count = 0
            for (index, piece) in pieces.enumerated() {
                if last, index == pieces.count - 1, piece.contains(UInt8(ascii: ".")) {
                    guard isIPv4(piece) else { return nil }
                    count += 2
                } else {
                    guard (1...4).contains(piece.count), piece.allSatisfy(isHexDigit) else { return nil }
                    count += 1
                }
            }
            return count
        }
        guard let doubleColon else { return groups(bytes, last: true) == 8 }
        guard let head = groups(bytes[..<doubleColon], last: false),
            let tail = groups(bytes[(doubleColon + 2)...], last: true)
        else { return false }
        return head + tail <= 7
    }

    /// `dec-octet "." dec-octet "." dec-octet "." dec-octet`, no leading zeros.
    private static func isIPv4(_ bytes: ArraySlice<UInt8>) -> Bool {
        let octets = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return octets.count == 4
            && octets.allSatisfy { octet in
                guard (1...3).contains(octet.count), octet.allSatisfy(isDigit),
                    octet.count == 1 || octet.first != UInt8(ascii: "0")
                else { return false }
                return octet.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) } <= 255
            }
    }

    /// Every byte matches `allowed`, or is the start of a whole percent-encoding (`%` and two hex digits).
    private static func allMatch(_ bytes: ArraySlice<UInt8>, _ allowed: (UInt8) -> Bool) -> Bool {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2])
                else { return false }
                index += 3
                continue
            }
            guard allowed(byte) else { return false }
            index += 1
        }
        return true
    }

    /// `*( pchar / "/" / "?" )`.
    private static func allQueryOrFragment(_ bytes: ArraySlice<UInt8>) -> Bool {
        allMatch(bytes) { isPathCharacter($0) || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
    }

    /// pchar without percent-encodings: `unreserved / sub-delims / ":" / "@"`.
    private static func isPathCharacter(_ byte: UInt8) -> Bool {
        isUnreservedOrSubDelimiter(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "@")
    }

    private static func isUnreservedOrSubDelimiter(_ byte: UInt8) -> Bool { isUnreserved(byte) || isSubDelimiter(byte) }

    /// `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlpha(byte) || isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// `"!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="`.
    private static func isSubDelimiter(_ byte: UInt8) -> Bool {
        "!$&'()*+,;=".utf8.contains(byte)
    }

    private static func isAlpha(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}
