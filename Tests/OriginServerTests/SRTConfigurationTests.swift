import OriginServer
import SRTInput
import TestSupport
import Testing

/// `ingest.srt`: the SRT listener's settings, and the access rules SRT callers get from the ingest tokens.
@Suite(.offThePool) struct SRTConfigurationTests {
    @Test func ingestSRTConfiguresTheListener() throws {
        let configuration = try ConfigurationFile.parse(
            """
            ingest:
              srt: { port: 9000, latencyMilliseconds: 400, passphrase: "0123456789ab", maxCallers: 4,
                     idleTimeoutMilliseconds: 1500 }
            """)
        let srt = try #require(configuration.srt)
        #expect(srt.port == 9000)
        #expect(srt.host == "0.0.0.0")
        #expect(srt.latencyMilliseconds == 400)
        #expect(srt.passphrase == "0123456789ab")
        #expect(srt.maxCallers == 4)
        #expect(srt.idleTimeoutMilliseconds == 1500)
        #expect(try ConfigurationFile.parse("{}").srt == nil)
    }

    @Test(arguments: [
        ("ingest: { srt: { port: 9000, latency: 120 } }", "unknown key 'latency'"),
        ("ingest: { srt: { latencyMilliseconds: 120 } }", "ingest.srt.port is required"),
        ("ingest: { srt: { port: 70000 } }", "out of range"),
        ("ingest: { srt: { port: 9000, passphrase: short } }", "10-79 characters"),
        ("ingest: { srt: { port: 9000, latencyMilliseconds: 5 } }", "latencyMilliseconds"),
        ("ingest: { srt: { port: 9000, maxCallers: 0 } }", "maxCallers"),
        ("ingest: { srt: { port: 9000, idleTimeoutMilliseconds: 10 } }", "idleTimeoutMilliseconds"),
    ])
    func badSRTSettingsAreRefusedSayingWhich(text: String, expected: String) {
        #expect(ConfigurationFileTests.refusal(text)?.contains(expected) == true, "\(text)")
    }

    @Test func callersGetTheIngestTokensAndTheirScopes() throws {
        let configuration = try ConfigurationFile.parse(
            """
            tokens:
              - { name: encoder-news, secret: news-secret-0123 }
              - { name: everywhere, secret: everywhere-secret }
            ingest: { tokens: [everywhere], srt: { port: 9000 } }
            channels:
              - name: news
                ingest: { tokens: [encoder-news] }
            """, environment: [:])
        let rules = SRTAccessRules(configuration: configuration)
        #expect(rules.grants(channel: "news", rendition: "video") == ["everywhere", "encoder-news"])
        #expect(rules.grants(channel: "other", rendition: "video") == ["everywhere"])
        #expect(rules.secrets["encoder-news"] == "news-secret-0123")
    }
}
