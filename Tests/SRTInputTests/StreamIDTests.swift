import TestSupport
import Testing

@testable import SRTInput

@Suite(.offThePool) struct StreamIDTests {
    @Test func accessControlSyntaxNamesChannelRenditionUserAndToken() throws {
        let id = try StreamID.parse("#!::r=live/video,m=publish,u=encoder1,s=sekret").get()
        #expect(id == StreamID(channel: "live", rendition: "video", user: "encoder1", token: "sekret"))
        let custom = try StreamID.parse("#!::m=publish,token=abc,r=news/audio_en,t=stream,h=origin.example").get()
        #expect(custom == StreamID(channel: "news", rendition: "audio_en", token: "abc"))
    }

    @Test func plainChannelSlashRenditionIsAPublish() throws {
        #expect(try StreamID.parse("live/video").get() == StreamID(channel: "live", rendition: "video"))
    }

    @Test(arguments: [
        ("#!::r=live/video,m=request", SRTRefusal.badMode),
        ("#!::r=live/video", SRTRefusal.badMode),  // the convention's default mode is request
        ("#!::r=live/video,m=bidirectional", SRTRefusal.badMode),
        ("#!::r=live/video,m=publish,t=file", SRTRefusal.unsupportedMedia),
        ("#!::r=live/video,m=publish,x=1", SRTRefusal.keyNotSupported),
        ("#!::m=publish", SRTRefusal.badRequestCode),
        ("#!::r=live,m=publish", SRTRefusal.badRequestCode),
        ("#!::r=live/video/extra,m=publish", SRTRefusal.badRequestCode),
        ("#!::r=live/vid eo,m=publish", SRTRefusal.badRequestCode),
        ("#!::r=live/video,r=live/other,m=publish", SRTRefusal.badRequestCode),
        ("#!::r=live/video,m=publish,s=a,token=b", SRTRefusal.badRequestCode),
        ("#!::r=live/video,,m=publish", SRTRefusal.badRequestCode),
        ("", SRTRefusal.badRequestCode),
        ("live", SRTRefusal.badRequestCode),
        ("../etc/passwd", SRTRefusal.badRequestCode),
    ])
    func refusedStreamIDsCarryTheAccessControlCode(text: String, code: Int32) {
        guard case .failure(let refusal) = StreamID.parse(text) else {
            Issue.record("'\(text)' was accepted")
            return
        }
        #expect(refusal.code == code, "\(text): \(refusal)")
    }

    @Test func theLogNeverShowsATokenFromTheStreamID() {
        #expect(SRTListener.redacted("#!::r=live/video,m=publish,s=sekret") == "#!::r=live/video,m=publish,s=***")
        #expect(SRTListener.redacted("#!::token=abc,r=a/b") == "#!::token=***,r=a/b")
        #expect(SRTListener.redacted("live/video") == "live/video")
    }
}

@Suite(.offThePool) struct SRTAccessTests {
    let rules = SRTAccessRules(
        secrets: ["all": "all-channels-secret", "news": "news-channel-secret", "short": "tiny", "cam": "camera-one-secret"],
        ingest: ["all"], channels: ["news": ["news", "short"]], renditions: ["sports": ["cam1": ["cam"]]])

    @Test func withoutTokensOnlyLoopbackCallersAreAdmittedUnencrypted() {
        let open = SRTAccessRules()
        let id = StreamID(channel: "live", rendition: "video")
        #expect(open.decide(id, loopback: true) == .success(SRTAdmission(credential: "loopback", passphrase: nil)))
        guard case .failure(let refusal) = open.decide(id, loopback: false) else {
            Issue.record("a remote caller was admitted with no token configured")
            return
        }
        #expect(refusal.code == SRTRefusal.forbidden)
        #expect(refusal.reason == "forbidden_remote")
    }

    @Test func theListenerPassphraseEncryptsLoopbackCallers() {
        let open = SRTAccessRules(passphrase: "listener-passphrase")
        #expect(
            open.decide(StreamID(channel: "live", rendition: "video"), loopback: true)
                == .success(SRTAdmission(credential: "loopback", passphrase: "listener-passphrase")))
    }

    @Test func theGrantingTokensSecretIsThePassphraseNamedByUser() {
        // Several tokens grant news/video (all, news, short): u= picks one, its secret is the passphrase.
        let id = StreamID(channel: "news", rendition: "video", user: "news")
        #expect(rules.decide(id, loopback: false) == .success(SRTAdmission(credential: "news", passphrase: "news-channel-secret")))
        // Without u=, several tokens grant it: which passphrase is unknown.
        guard case .failure(let refusal) = rules.decide(StreamID(channel: "news", rendition: "video"), loopback: true)
        else {
            Issue.record("admitted without naming a token")
            return
        }
        #expect(refusal.code == SRTRefusal.unauthorized)
    }

    @Test func aSingleGrantingTokenNeedsNoUser() {
        let single = SRTAccessRules(secrets: ["cam": "camera-one-secret"], renditions: ["sports": ["cam1": ["cam"]]])
        #expect(
            single.decide(StreamID(channel: "sports", rendition: "cam1"), loopback: false)
                == .success(SRTAdmission(credential: "cam", passphrase: "camera-one-secret")))
        // A scope some token grants takes no anonymous caller, not even from loopback: it must use the passphrase.
        guard case .success(let admission) = single.decide(StreamID(channel: "sports", rendition: "cam1"), loopback: true)
        else { return }
        #expect(admission.passphrase == "camera-one-secret")
    }

    @Test func aTokenNeverReachesPastItsScope() {
        let wrong = rules.decide(StreamID(channel: "sports", rendition: "cam1", user: "news"), loopback: false)
        #expect(wrong.refusal?.code == SRTRefusal.forbidden)
        #expect(wrong.refusal?.reason == "wrong_token")
        let inStreamID = rules.decide(StreamID(channel: "sports", rendition: "cam2", token: "camera-one-secret"), loopback: true)
        #expect(inStreamID.refusal?.reason == "wrong_token")
        let unknownUser = rules.decide(StreamID(channel: "news", rendition: "video", user: "nobody"), loopback: false)
        #expect(unknownUser.refusal?.code == SRTRefusal.unauthorized)
        // With no token granting live/video, a configured token is refused even from loopback.
        let open = SRTAccessRules(secrets: ["cam": "camera-one-secret"], renditions: ["sports": ["cam1": ["cam"]]])
        #expect(open.decide(StreamID(channel: "live", rendition: "video", user: "cam"), loopback: true).refusal?.reason == "wrong_token")
    }

    @Test func aTokenInTheStreamIDAdmitsWithoutPassphrase() {
        let id = StreamID(channel: "sports", rendition: "cam1", token: "camera-one-secret")
        #expect(rules.decide(id, loopback: false) == .success(SRTAdmission(credential: "cam", passphrase: nil)))
        let bad = rules.decide(StreamID(channel: "sports", rendition: "cam1", token: "guess"), loopback: false)
        #expect(bad.refusal?.code == SRTRefusal.unauthorized)
    }

    @Test func aSecretTooShortForAPassphraseIsRefusedSayingSo() {
        let refusal = rules.decide(StreamID(channel: "news", rendition: "video", user: "short"), loopback: false).refusal
        #expect(refusal?.code == SRTRefusal.unauthorized)
        #expect(refusal?.message.contains("10-79") == true)
    }
}

extension Result where Failure == SRTRefusal {
    var refusal: SRTRefusal? {
        if case .failure(let refusal) = self { return refusal }
        return nil
    }
}
