import Foundation
import OriginCore
import OriginServer
import TestSupport
import Testing

/// `tokens:`, `admin.tokens`, `ingest.tokens`, a channel's `ingest:` and `limits:` in the configuration file.
@Suite("Configuration: named tokens and limits", .offThePool)
struct AccessConfigurationFileTests {
    @Test func tokensComeFromTheFileAFileOrTheEnvironmentAndGrantTheirScopes() throws {
        let directory = try TemporaryDirectory.make("tokens").path
        let secretFile = directory + "/ops.token"
        try Data("0ps-from-file\n".utf8).write(to: URL(fileURLWithPath: secretFile))
        let configuration = try ConfigurationFile.parse(
            """
            tokens:
              - {name: encoder-news, secretEnv: NEWS_TOKEN}
              - {name: ops, secretFile: \(secretFile)}
              - {name: all, secret: every-channel}
              - {name: news-low, secret: news-180p}
            admin: {tokens: [ops]}
            ingest: {tokens: [all]}
            limits: {channels: 20, renditionsPerChannel: 4, channelMemoryBytes: 1000000, channelDiskBytes: 5000000,
                     autoCreationsPerMinute: 3}
            channels:
              - name: news
                ingest: {tokens: [encoder-news], renditions: {180p: [news-low]}}
            """, environment: ["NEWS_TOKEN": "n3ws-from-env"])
        #expect(
            configuration.access.tokens == [
                NamedToken(name: "encoder-news", secret: "n3ws-from-env"),
                NamedToken(name: "ops", secret: "0ps-from-file"), NamedToken(name: "all", secret: "every-channel"),
                NamedToken(name: "news-low", secret: "news-180p"),
            ])
        #expect(configuration.access.admin == ["ops"])
        #expect(configuration.access.ingest == ["all"])
        #expect(configuration.access.channels == ["news": ["encoder-news"]])
        #expect(configuration.access.renditions == ["news": ["180p": ["news-low"]]])
        #expect(
            configuration.origin.limits
                == OriginLimits(
                    channels: 20, renditionsPerChannel: 4, channelMemoryBytes: 1_000_000, channelDiskBytes: 5_000_000,
                    autoCreationsPerMinute: 3))
        #expect(try ConfigurationFile.parseDefaults.origin.limits == OriginLimits())
    }

    @Test(arguments: [
        ("tokens: [{name: a, secret: s3cret-value, secretEnv: X}]", "token 'a': give exactly one of secret"),
        ("tokens: [{name: a}]", "token 'a': give exactly one of secret, secretFile or secretEnv (0 given)"),
        ("tokens: [{name: a, secretEnv: UNSET_VARIABLE}]", "token 'a': environment variable 'UNSET_VARIABLE'"),
        ("tokens: [{name: a, secretFile: /nonexistent/token}]", "token 'a': cannot read secretFile"),
        ("tokens: [{name: a, secret: 's3cret value'}]", "token 'a': the secret must be printable ASCII"),
        (
            "tokens: [{name: a, secret: s3cret-value}, {name: b, secret: s3cret-value}]",
            "tokens 'a' and 'b' have the same secret"
        ),
        ("tokens: [{name: a, secret: x1}, {name: a, secret: x2}]", "token 'a' is declared twice"),
        ("admin: {token: t0ken, tokens: []}\ntokens: [{name: admin, secret: x1}]", "token name 'admin' is the name"),
        ("ingest: {tokens: [ghost]}", "ingest.tokens names token 'ghost', which tokens: does not declare"),
        ("channels: [{name: c, ingest: {tokens: [ghost]}}]", "channel 'c' ingest.tokens names token 'ghost'"),
        ("ingest: {defaults: {ingest: {tokens: []}}}", "ingest.defaults cannot have ingest tokens"),
        ("limits: {channels: 0}", "limits.channels, renditionsPerChannel"),
        ("limits: {channelBytes: 5}", "unknown key 'channelBytes'"),
    ])
    func mistakesAreRefusedByNameWithoutTheSecret(_ text: String, _ expected: String) {
        do {
            _ = try ConfigurationFile.parse(text, environment: [:])
            Issue.record("accepted: \(text)")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
            #expect(!"\(error)".contains("s3cret"), "\(error)")
        }
    }
}

extension ConfigurationFile {
    /// An empty configuration file's settings.
    static var parseDefaults: ServerConfiguration {
        get throws { try parse("{}", environment: [:]) }
    }
}
