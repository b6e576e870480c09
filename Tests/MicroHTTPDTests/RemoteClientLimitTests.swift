import Glibc
import MicroHTTPD
import TestSupport
import Testing

/// `HTTPServerConfiguration.remoteClientConnectionLimit`: one remote address cannot hold every connection slot;
/// loopback clients (local players, tests) are not counted. A remote client here is this host seen through its own
/// non-loopback address (the kernel gives the connection that source address).
@Suite(.offThePool) struct RemoteClientLimitTests {
    /// This host's first non-loopback IPv4 address.
    static func nonLoopbackAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr, Int32(address.pointee.sa_family) == AF_INET else { continue }
            let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard UInt32(bigEndian: ipv4.s_addr) >> 24 != 127 else { continue }
            return String(cString: inet_ntoa(ipv4))
        }
        return nil
    }

    /// A server on every IPv4 interface with the default configuration otherwise.
    static func withServer(_ body: (HTTPServer, Int) throws -> Void) throws {
        let configuration = HTTPServerConfiguration(host: "0.0.0.0", port: 0, threadCount: 2)
        let server = HTTPServer(configuration: configuration) { _ in .respond(.text(200, "ok\n")) }
        try server.start()
        defer { server.stop() }
        try body(server, server.boundPort)
    }

    /// Whether `connection` gets a 200 for a GET (false if it was answered 503 or closed).
    static func served(_ connection: RawHTTPConnection) -> Bool {
        guard connection.sendIfOpen("GET /x HTTP/1.1\r\nHost: t\r\n\r\n") else { return false }
        return (try? connection.readResponse().status) == 200
    }

    @Test func oneRemoteAddressHoldsAtMostItsDefaultLimitOfConnectionsWhileOthersAreServed() throws {
        let remote = try #require(Self.nonLoopbackAddress(), "this host has no non-loopback IPv4 address")
        try Self.withServer { server, port in
            #expect(server.configuration.remoteClientConnectionLimit == 256)
            // 300 idle connections from one remote address: 256 are held, the rest answered 503 and closed.
            var held: [RawHTTPConnection] = []
            for _ in 0..<300 { held.append(try RawHTTPConnection(port: port, host: remote, timeout: .seconds(3))) }
            // Which 44 are refused depends on the order the two workers accept them in; how soon, on the load.
            try waitUntil("44 connections answered over the address limit", interval: .milliseconds(20)) {
                held.filter { $0.isReadable(waitingMilliseconds: 0) }.count >= 44
            }
            var refused = 0
            var answeredOtherwise: [String] = []
            for connection in held where connection.isReadable(waitingMilliseconds: 0) {
                let answer = String(decoding: connection.receiveAll(), as: UTF8.self)
                if answer.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n") {
                    refused += 1
                } else {
                    answeredOtherwise.append(answer)
                }
            }
            #expect(refused == 44, "connections past 256 from one address were answered 503: \(refused) of 44")
            #expect(answeredOtherwise.isEmpty, "held connections got an answer: \(answeredOtherwise)")
            #expect(server.connectionsRefusedOverAddressLimit == 44)
            held.removeAll { $0.isReadable(waitingMilliseconds: 0) }
            #expect(held.count == 256)
            // Loopback clients are served meanwhile, and the held remote connections too.
            for _ in 0..<5 { #expect(Self.served(try RawHTTPConnection(port: port, timeout: .seconds(3)))) }
            #expect(Self.served(held[0]))
            // One remote connection closed frees one slot for that address.
            held.removeFirst()
            try waitUntil("a slot to free up") {
                Self.served(try RawHTTPConnection(port: port, host: remote, timeout: .seconds(3)))
            }
        }
    }

    @Test func loopbackClientsAreNotCountedAgainstTheAddressLimit() throws {
        try Self.withServer { server, port in
            var held: [RawHTTPConnection] = []
            for _ in 0..<300 { held.append(try RawHTTPConnection(port: port, timeout: .seconds(3))) }
            #expect(held.allSatisfy { Self.served($0) })
            #expect(server.connectionsRefusedOverAddressLimit == 0)
        }
    }
}
