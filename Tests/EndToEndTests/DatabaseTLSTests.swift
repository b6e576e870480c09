import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndRestarts {
    /// `database.url` with `sslmode` (docs/redundancy.md): a PostgreSQL that takes TLS connections only, with a
    /// certificate from a test CA. `sslmode=verify-full` with that CA as `sslrootcert` stores markers; without
    /// `sslmode` (no TLS) and with `verify-full` against another CA, the marker POST gets 503 with the reason.
    @Suite("End to end: the group database over TLS", .tags(.endToEnd))
    struct DatabaseTLSTests {
        static func configuration(_ url: String) -> String {
            """
            logLevel: info
            database:
              url: "\(url)"
            channels:
              - name: demo
                source: test-source
                segmentDuration: 2
                window: { segments: 6 }
                renditions:
                  - { name: 360p, profile: 360p }
            """
        }

        /// The status of a marker POST to an origin started with `url` (and its body).
        static func markerPost(url: String, label: String, id: String) async throws -> (Int, String) {
            try await OriginProcess.withRunning(configuration: configuration(url), label: label) { origin in
                let client = HTTPClient(port: origin.port)
                try await waitUntil("the demo playlist", timeout: .seconds(20)) {
                    (try? await client.get("/live/demo/360p/index.m3u8"))?.status == 200
                }
                var last = (0, "")
                // The first call may race the first connection: a few tries, as an operator would.
                for _ in 0..<3 {
                    let body = #"{"id": "\#(id)", "class": "com.example.ad", "plannedDuration": 30}"#
                    let response = try await client.request(
                        "POST", "/admin/channels/demo/dateranges", headers: [("Content-Type", "application/json")],
                        body: Array(body.utf8))
                    last = (response.status, response.text)
                    if response.status == 201 { break }
                    try await Task.sleep(for: .milliseconds(500))
                }
                return last
            }
        }

        @Test func sslmodeVerifyFullReachesAPostgreSQLThatTakesTLSOnly() async throws {
            let scratch = try TemporaryDirectory.make("hlsorigin-pg-ca")
            let other = scratch.appendingPathComponent("other")
            try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
            let otherCA = try TestCertificateAuthority.make(in: other, name: "some other CA")
            var trusted: URL?
            let database = try await PostgresCluster(label: "tls") { directory in
                let ca = directory.appendingPathComponent("ca")
                try FileManager.default.createDirectory(at: ca, withIntermediateDirectories: true)
                let authority = try TestCertificateAuthority.make(in: ca)
                let server = try authority.issue(name: "postgres", serial: 7, commonName: "127.0.0.1")
                chmod(server.keyURL.path, 0o600)
                trusted = authority.certificateURL
                // TLS connections only: a connection without it finds no pg_hba.conf entry.
                try Data("local all all trust\nhostssl all all 127.0.0.1/32 trust\n".utf8).write(
                    to: directory.appendingPathComponent("data/pg_hba.conf"))
                return ["ssl=on", "ssl_cert_file=\(server.chainURL.path)", "ssl_key_file=\(server.keyURL.path)"]
            }
            defer { Task { await database.remove() } }
            let rootCertificate = try #require(trusted)
            // The CA file must stay readable by this process after the cluster's directory went to `postgres`.
            let caCopy = scratch.appendingPathComponent("trusted-ca.pem")
            try Data(contentsOf: rootCertificate).write(to: caCopy)
            let verified = try await Self.markerPost(
                url: database.url + "?sslmode=verify-full&sslrootcert=\(caCopy.path)", label: "pg-tls", id: "tls")
            let plain = try await Self.markerPost(url: database.url, label: "pg-plain", id: "plain")
            let wrongCA = try await Self.markerPost(
                url: database.url + "?sslmode=verify-full&sslrootcert=\(otherCA.certificateURL.path)",
                label: "pg-wrong-ca", id: "wrong")
            print(
                "marker POST over TLS (verify-full): \(verified.0); without sslmode: \(plain.0) "
                    + "\(plain.1.split(whereSeparator: \.isNewline).joined(separator: " ")); verify-full against "
                    + "another CA: \(wrongCA.0) \(wrongCA.1.split(whereSeparator: \.isNewline).joined(separator: " "))")
            #expect(verified.0 == 201, "\(verified.1)")
            #expect(plain.0 == 503)
            #expect(wrongCA.0 == 503)
            #expect(wrongCA.1.contains("database"))
        }
    }
}
