import Foundation
import LiveTimeline
import Logging
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// `hlsorigin check-config`: what start checks beyond loading, and the summary an operator reads.
@Suite("check-config: the checks of start, without starting", .offThePool)
struct ConfigurationCheckTests {
    @Test func aTestSourceChannelNamingNoProfileIsRefused() {
        var configuration = ServerConfiguration()
        configuration.origin.channels = [
            ChannelConfiguration(name: "demo", renditions: [RenditionConfiguration(name: "4k")], source: .testSource)
        ]
        #expect(throws: (any Error).self) { try ConfigurationCheck.run(configuration) }
    }

    /// check-config passed a channel named against the name rule, which start (`Origin.init`) refuses.
    @Test func aChannelNameStartRefusesIsRefused() throws {
        for name in ["bad name", "a/b", "caf\u{E9}", String(repeating: "x", count: 65)] {
            var configuration = ServerConfiguration()
            configuration.origin.channels = [
                ChannelConfiguration(name: name, renditions: [RenditionConfiguration(name: "360p")])
            ]
            #expect(throws: (any Error).self, "start refuses \(name.debugDescription)") {
                try Origin(configuration: configuration.origin, clock: ManualClock(), logger: Logger(label: "check"))
            }
            let error = #expect(throws: (any Error).self, "\(name.debugDescription)") {
                try ConfigurationCheck.run(configuration)
            }
            #expect("\(error.map { "\($0)" } ?? "")".contains("invalid channel name"), "\(name.debugDescription)")
        }
    }

    @Test func summaryNamesListenersChannelsTokensAndAdminAccess() throws {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 9000
        configuration.origin.channels = [
            ChannelConfiguration(
                name: "demo", renditions: [RenditionConfiguration(name: "360p"), RenditionConfiguration(name: "180p")],
                source: .testSource),
            ChannelConfiguration(name: "news", renditions: [RenditionConfiguration(name: "720p")]),
        ]
        let open = try ConfigurationCheck.run(configuration)
        #expect(open.contains("listens: http 127.0.0.1:9000"))
        #expect(open.contains("channel demo: test source, renditions 360p, 180p"))
        #expect(open.contains("channel news: push, renditions 720p"))
        #expect(open.contains("admin API: loopback clients only (no admin token)"))
        configuration.access.tokens = [NamedToken(name: "ops", secret: "s")]
        configuration.access.admin = ["ops"]
        let closed = try ConfigurationCheck.run(configuration)
        #expect(closed.contains("named tokens: ops"))
        #expect(closed.contains("admin API: tokens ops"))
        #expect(!closed.contains { $0.contains("\"s\"") || $0.hasSuffix(" s") })
    }
}
