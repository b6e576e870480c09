import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndRestarts {
    /// Content Steering's health with a group database (docs/content-steering.md, "Health"): origin A reaches B
    /// through a proxy the test cuts. Without a database, A moves B's pathway last once B has not answered for 6 s;
    /// with one, B's heartbeat row keeps it healthy (one origin's failed requests alone never make a peer down);
    /// killed with SIGKILL, B's heartbeat goes stale too and A moves it last.
    @Suite("End to end: a peer A cannot reach is not down while its heartbeat is fresh", .tags(.endToEnd))
    struct SteeringHeartbeatTests {
        /// The player is on pathway b: b leads while it is healthy, and goes after a once it is not.
        static let query = "/live/hb/steering.json?_HLS_pathway=b"

        static func configuration(own: String, peer: String, a: String, b: String, database: String?) -> String {
            """
            logLevel: info
            \(database.map { "database: {url: \"\($0)\"}" } ?? "")
            redundancy: { peers: ["\(peer)"] }
            steering:
              self: \(own)
              ttl: 2
              pathways:
                - {id: a, uri: "\(a)", origins: ["\(a)"]}
                - {id: b, uri: "\(b)", origins: ["\(b)"]}
            channels:
              - {name: hb, source: test-source, segmentDuration: 1, renditions: [{name: 360p, profile: 360p}]}
            """
        }

        /// Origins A and B, B seen by A through `proxy`; returns them once A steers with both healthy.
        static func start(
            database: String?, label: String
        ) async throws -> (a: OriginProcess, b: OriginProcess, proxy: CuttableProxy) {
            let ports = [try OriginProcess.freePort(), try OriginProcess.freePort()]
            let proxy = try CuttableProxy(upstreamPort: ports[1])
            let a = "http://127.0.0.1:\(ports[0])"
            let b = "http://127.0.0.1:\(proxy.port)"
            let first = try await OriginProcess(
                configuration: configuration(own: a, peer: b, a: a, b: b, database: database), label: "\(label)-a",
                port: ports[0])
            let second = try await OriginProcess(
                configuration: configuration(own: b, peer: a, a: a, b: b, database: database), label: "\(label)-b",
                port: ports[1])
            try await waitUntil("A to see B healthy", timeout: .seconds(15), interval: .milliseconds(200)) {
                (try? await HTTPClient(port: ports[0]).get(query).text)?.contains(#"["b","a"]"#) == true
            }
            return (first, second, proxy)
        }

        /// A's PATHWAY-PRIORITY now.
        static func priority(of origin: OriginProcess) async throws -> String {
            let text = try await HTTPClient(port: origin.port).get(query).text
            return text.components(separatedBy: "\"PATHWAY-PRIORITY\":").last ?? text
        }

        /// A's PATHWAY-PRIORITY once it starts with `expected` (a result that, once reached, stays: B stays cut or
        /// dead), or the last one read after 15 s.
        static func priority(of origin: OriginProcess, reaching expected: String) async throws -> String {
            var last = ""
            try? await waitUntil("A to steer \(expected)", timeout: .seconds(15), interval: .milliseconds(200)) {
                last = (try? await priority(of: origin)) ?? ""
                return last.hasPrefix(expected)
            }
            return last
        }

        /// A report's lifetime (6 s) and a round: a peer cut longer than that without a heartbeat would be down.
        static let pastTheLifetime: Duration = .milliseconds(7500)

        @Test("cut from A: down without a database, healthy with B's heartbeat; B killed: down with the database")
        func aPeerIsDownOnlyWhenItsHeartbeatIsStaleToo() async throws {
            // Without a database: A's failed requests are all there is.
            let alone = try await Self.start(database: nil, label: "hb-alone")
            alone.proxy.cut()
            let withoutDatabase = try await Self.priority(of: alone.a, reaching: #"["a","b"]"#)
            alone.a.kill()
            alone.b.kill()
            alone.proxy.stop()
            #expect(withoutDatabase.hasPrefix(#"["a","b"]"#), "without a database: \(withoutDatabase)")

            let database = try await PostgresCluster(label: "steering")
            let group = try await Self.start(database: database.url, label: "hb-db")
            defer {
                group.a.kill()
                group.b.kill()
                group.proxy.stop()
            }
            do {
                group.proxy.cut()
                // Not down is not reached at one moment: wait past the lifetime, then look.
                try await Task.sleep(for: Self.pastTheLifetime)
                let cut = try await Self.priority(of: group.a)
                #expect(cut.hasPrefix(#"["b","a"]"#), "B unreachable from A but beating: \(cut)")
                group.b.kill()
                let killed = try await Self.priority(of: group.a, reaching: #"["a","b"]"#)
                #expect(killed.hasPrefix(#"["a","b"]"#), "B killed: \(killed)")
                print(
                    "steering health: B cut from A, no database: \(withoutDatabase.trimmingCharacters(in: .whitespacesAndNewlines)); "
                        + "with the database: \(cut.trimmingCharacters(in: .whitespacesAndNewlines)); B killed: "
                        + killed.trimmingCharacters(in: .whitespacesAndNewlines))
            } catch {
                await database.remove()
                throw EndToEndError("\(error)\n--- A ---\n\(group.a.logTail())\n--- B ---\n\(group.b.logTail())")
            }
            await database.remove()
        }
    }
}
