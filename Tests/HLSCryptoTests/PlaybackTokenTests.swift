import HLSCrypto
import Testing

@Suite struct PlaybackTokenTests {
    let secret = Array("a playback secret of at least 32 bytes!".utf8)
    let now: Int64 = 1_795_910_400

    @Test func anIssuedTokenVerifiesUntilItsExpiry() {
        let token = PlaybackToken.issue(channel: "news", expirySeconds: now + 3600, secret: secret)
        #expect(token.hasPrefix("\(now + 3600)-"))
        #expect(token.count == "\(now + 3600)-".count + 22)
        #expect(token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        let verified = PlaybackToken.verify(
            token, channel: "news", secret: secret, nowSeconds: now, maxAheadSeconds: 86400)
        #expect(verified == .success(now + 3600))
    }

    @Test func everyRefusalHasItsReason() {
        func check(
            _ token: String?, channel: String = "news", now: Int64? = nil, max: Int64 = 86400
        )
            -> PlaybackTokenError?
        {
            if case .failure(let e) = PlaybackToken.verify(
                token, channel: channel, secret: secret, nowSeconds: now ?? self.now, maxAheadSeconds: max)
            {
                return e
            }
            return nil
        }
        let good = PlaybackToken.issue(channel: "news", expirySeconds: now + 60, secret: secret)
        #expect(check(nil) == .missing)
        #expect(check("") == .missing)
        #expect(check("abc") == .malformed)
        #expect(check("123-!!!") == .malformed)
        #expect(check("0123-" + good.split(separator: "-", maxSplits: 1)[1]) == .malformed)
        #expect(check(good, channel: "sport") == .badSignature(channel: "sport"))
        var tampered = Array(good)
        tampered[tampered.count - 3] = tampered[tampered.count - 3] == "A" ? "B" : "A"
        #expect(check(String(tampered)) == .badSignature(channel: "news"))
        // Expiry exactly now is refused: a token is valid strictly before its expiry.
        #expect(check(good, now: now + 60) == .expired(atSeconds: now + 60))
        #expect(check(good, max: 30) == .tooFarAhead(maxSeconds: 30))
        #expect(
            PlaybackTokenError.expired(atSeconds: 1_795_482_000).description
                == "playback token expired at 2026-11-24T01:00:00Z")
    }
}
