import Glibc
import Synchronization
import TestSupport
import Testing

@testable import MicroHTTPD

/// The deadline sweep driven by a manual clock: no sleeps, no server, a socket pair standing for a connection.
@Suite(.offThePool) struct RequestDeadlineSweepTests {
    /// A clock a test moves by hand.
    final class ManualMilliseconds: MillisecondClock {
        let now = Atomic<Int64>(1_000_000)
        func advance(_ milliseconds: Int64) { now.add(milliseconds, ordering: .relaxed) }
        func milliseconds() -> Int64 { now.load(ordering: .relaxed) }
    }

    /// A connected pair: the server's end (registered with the deadlines) and the client's end.
    private func socketPair() throws -> (server: Int32, client: Int32) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    /// Whether `client` sees its peer shut down (a read returns end of file at once rather than would-block).
    private func peerShutDown(_ client: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(client, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test func aConnectionWithoutAHeadIsCutWhenItsDeadlinePassesOnTheInjectedClock() throws {
        let time = ManualMilliseconds()
        let deadlines = RequestDeadlines(limitSeconds: 2, clock: time, logger: HTTPServer.silentLogger)
        let (server, client) = try socketPair()
        defer { close(server); close(client) }
        let (record, withinLimit) = deadlines.connectionStarted(socket: server)
        #expect(withinLimit)
        time.advance(1_999)
        deadlines.sweep()
        #expect(deadlines.cutConnections == 0)
        #expect(!peerShutDown(client))
        time.advance(1)
        deadlines.sweep()
        #expect(deadlines.cutConnections == 1)
        #expect(peerShutDown(client))
        deadlines.connectionClosed(record)
    }

    @Test func aBodyThatKeepsComingIsNotCutAndOneThatStopsIs() throws {
        let time = ManualMilliseconds()
        let deadlines = RequestDeadlines(limitSeconds: 1, clock: time, logger: HTTPServer.silentLogger)
        let (server, client) = try socketPair()
        defer { close(server); close(client) }
        let (record, _) = deadlines.connectionStarted(socket: server)
        #expect(deadlines.headArrived(record, expectsBody: true))
        for received in 1...5 {
            time.advance(900)
            deadlines.bodyProgress(record, received: received * 1000)
            deadlines.sweep()
        }
        #expect(deadlines.cutConnections == 0)
        time.advance(1_000)
        deadlines.sweep()
        #expect(deadlines.cutConnections == 1)
        #expect(peerShutDown(client))
        deadlines.connectionClosed(record)
    }

    @Test func aCompletedRequestStartsTheNextHeadDeadlineFromTheInjectedClock() throws {
        let time = ManualMilliseconds()
        let deadlines = RequestDeadlines(limitSeconds: 1, clock: time, logger: HTTPServer.silentLogger)
        let (server, client) = try socketPair()
        defer { close(server); close(client) }
        let (record, _) = deadlines.connectionStarted(socket: server)
        #expect(deadlines.headArrived(record, expectsBody: false))
        // An answer being sent is never timed.
        time.advance(60_000)
        deadlines.sweep()
        #expect(deadlines.cutConnections == 0)
        deadlines.requestCompleted(record)
        time.advance(999)
        deadlines.sweep()
        #expect(deadlines.cutConnections == 0)
        time.advance(1)
        deadlines.sweep()
        #expect(deadlines.cutConnections == 1)
        deadlines.connectionClosed(record)
    }

    /// A cut connection's socket is shut down at once, but libmicrohttpd closes it (and reports it closed) only when
    /// its thread next polls it. The slot is free from the cut: a client connecting in between is served, not
    /// refused with a 503 for a connection that is already dead.
    @Test func aCutConnectionFreesItsSlotBeforeLibmicrohttpdReportsItClosed() throws {
        let time = ManualMilliseconds()
        let deadlines = RequestDeadlines(
            limitSeconds: 2, connectionLimit: 2, clock: time, logger: HTTPServer.silentLogger)
        let first = try socketPair()
        let second = try socketPair()
        let third = try socketPair()
        defer { for pair in [first, second, third] { close(pair.server); close(pair.client) } }
        let (firstRecord, _) = deadlines.connectionStarted(socket: first.server)
        time.advance(1_000)
        let (secondRecord, _) = deadlines.connectionStarted(socket: second.server)
        time.advance(1_000)
        deadlines.sweep()
        #expect(peerShutDown(first.client))
        #expect(!peerShutDown(second.client))
        // The first is cut and not yet reported closed: the third connection takes its slot.
        let (thirdRecord, thirdWithinLimit) = deadlines.connectionStarted(socket: third.server)
        #expect(thirdWithinLimit)
        // Its late close report frees nothing more: the limit still holds with the second and the third.
        deadlines.connectionClosed(firstRecord)
        let (fourthRecord, fourthWithinLimit) = deadlines.connectionStarted(socket: -1)
        #expect(!fourthWithinLimit)
        for record in [secondRecord, thirdRecord, fourthRecord] { deadlines.connectionClosed(record) }
        let (fifthRecord, fifthWithinLimit) = deadlines.connectionStarted(socket: -1)
        #expect(fifthWithinLimit)
        deadlines.connectionClosed(fifthRecord)
    }

    /// The per-address limit is freed at the cut the same way.
    @Test func aCutConnectionFreesItsAddressSlotAtTheCut() throws {
        let time = ManualMilliseconds()
        let deadlines = RequestDeadlines(
            limitSeconds: 1, remoteAddressLimit: 1, clock: time, logger: HTTPServer.silentLogger)
        let address = try #require(RemoteAddress.ipv4(0x0A00_0001))
        let first = try socketPair()
        let second = try socketPair()
        defer { for pair in [first, second] { close(pair.server); close(pair.client) } }
        let (firstRecord, _) = deadlines.connectionStarted(socket: first.server, address: address)
        let (refused, refusedWithinLimit) = deadlines.connectionStarted(socket: -1, address: address)
        #expect(!refusedWithinLimit)
        deadlines.connectionClosed(refused)
        time.advance(1_000)
        deadlines.sweep()
        #expect(peerShutDown(first.client))
        let (secondRecord, secondWithinLimit) = deadlines.connectionStarted(socket: second.server, address: address)
        #expect(secondWithinLimit)
        for record in [firstRecord, secondRecord] { deadlines.connectionClosed(record) }
    }
}
