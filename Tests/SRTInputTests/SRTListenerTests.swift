import Foundation
import LiveTimeline
import Logging
import OriginCore
import TestSupport
import Testing

@testable import SRTInput

/// The SRT listener in this process with a libsrt caller of the test's own (`SRTProbe`): what is decided in the
/// handshake, before and after the listen callback.
@Suite(.serialized) struct SRTListenerTests {
    /// A sink no test here reaches: every caller is refused, or never accepted.
    struct RefusingSink: ContinuousStreamSink {
        struct Refused: Error {}
        func open(channel: String, rendition: String, peer: String) throws -> any ContinuousStreamSession {
            throw Refused()
        }
    }

    func makeListener(
        autoCreate: Bool, rules: SRTAccessRules = SRTAccessRules(), port: Int = 0
    ) throws -> SRTListener {
        var configuration = OriginConfiguration(channels: [], dataDirectory: nil)
        configuration.ingest.autoCreate = autoCreate
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let origin = try Origin(configuration: configuration, clock: SystemClock(), logger: logger)
        var settings = SRTConfiguration(port: port)
        settings.host = "127.0.0.1"
        return try SRTListener(
            configuration: settings, rules: rules, origin: origin, sink: RefusingSink(), logger: logger)
    }

    /// The listener listens from its creation, before `run()` accepts: a caller of that moment is judged in its
    /// handshake too (before, libsrt admitted it without the callback, whatever it asked for).
    @Test func aCallerBeforeTheListenerRunsIsJudgedInItsHandshake() throws {
        let listener = try makeListener(autoCreate: false)
        let outcome = SRTProbe.connect(port: listener.boundPort, streamID: "#!::r=nochannel/video,m=publish")
        if case .connected(let socket) = outcome { SRTProbe.close(socket) }
        #expect(outcome == .rejected(1404))
        #expect(listener.counters.refusals["unknown_channel"] == 1)
    }

    /// libsrt lets SRT sockets of one process share a port unless SRTO_REUSEADDR is off.
    @Test func aPortAnotherListenerHoldsFailsAtStart() throws {
        let first = try makeListener(autoCreate: true)
        #expect(first.boundPort > 0)
        #expect(throws: (any Error).self) { _ = try makeListener(autoCreate: true, port: first.boundPort) }
    }

    /// A caller admitted by its stream id whose passphrase then fails SRT's key exchange is counted (and audited)
    /// as a refusal: libsrt reports it only in its log.
    @Test func aWrongOrMissingPassphraseIsCountedAsARefusal() async throws {
        let listener = try makeListener(autoCreate: true, rules: SRTAccessRules(passphrase: "listener-passphrase-1"))
        #expect(
            SRTProbe.connect(port: listener.boundPort, streamID: "live/video", passphrase: "wrong-passphrase")
                == .rejected(SRTProbe.badSecret))
        #expect(SRTProbe.connect(port: listener.boundPort, streamID: "live/video") == .rejected(SRTProbe.unsecure))
        try await waitUntil("both refusals are counted", timeout: .seconds(5)) {
            let refusals = listener.counters.refusals
            return refusals["bad_passphrase"] == 1 && refusals["unsecure"] == 1
        }
    }
}

/// The line of libsrt's log that reports a caller refused in the key exchange (libsrt 1.5.1's wording).
@Suite struct SRTHandshakeFailuresTests {
    @Test func theRejectionLineNamesTheSocketAndTheReason() {
        let line =
            "07:24:00.025366/SRT:RcvQ:w1!W:SRT.cn: @1024115797:newConnection: connection rejected due to: "
            + "INTERNAL REJECTION - ERROR:BADSECRET\n"
        let found = SRTHandshakeFailures.rejection(in: line)
        #expect(found?.socket == 1_024_115_797)
        #expect(found?.code == SRTProbe.badSecret)
        let unsecure = SRTHandshakeFailures.rejection(
            in: "@77:newConnection: connection rejected due to: INTERNAL REJECTION - ERROR:UNSECURE")
        #expect(unsecure?.code == SRTProbe.unsecure)
        #expect(
            SRTHandshakeFailures.rejection(
                in: "processConnectRequest: rsp(REJECT): 1010 - Incorrect passphrase") == nil)
    }
}

