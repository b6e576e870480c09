import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEnd {
    /// HTTPS (docs/security.md, "TLS"): the real binary with `server.tls`, a CA and server certificates made by
    /// `openssl` for the test, ffmpeg pushing over https, curl, ffprobe and Python's http.client reading over https,
    /// plain HTTP beside it, and reloads that renew the certificate or refuse a broken key.
    @Suite("End to end: TLS (HTTPS listener beside HTTP, certificate renewed by SIGHUP)", .tags(.endToEnd))
    struct TLSEndToEndTests {
        /// A Python http.client over TLS trusting only the test CA: one keep-alive connection, a GET of `path` every
        /// 250 ms for `seconds`, one line per answer: "status local-port serial".
        static let keepAliveReader = """
            import http.client, ssl, sys, time
            port, ca, path, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
            context = ssl.create_default_context(cafile=ca)
            connection = http.client.HTTPSConnection("localhost", port, context=context, timeout=10)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                serial = connection.sock.getpeercert()["serialNumber"].lower()
                print(response.status, connection.sock.getsockname()[1], serial, flush=True)
                time.sleep(0.25)
            """

        @Test("ffmpeg pushes over https, curl and ffprobe read it, HTTP still serves; SIGHUP renews the certificate")
        func httpsBesideHTTPWithRenewal() async throws {
            let certificates = try TemporaryDirectory.make("hlsorigin-e2e-tls-ca")
            let authority = try TestCertificateAuthority.make(in: certificates)
            let first = try authority.issue(name: "first", serial: 0x1001)
            let renewed = try authority.issue(name: "renewed", serial: 0x2002)
            let other = try authority.issue(name: "other", serial: 0x3003)
            let certificate = certificates.appendingPathComponent("server.pem")
            let key = certificates.appendingPathComponent("server.key")
            func install(_ issued: TestCertificateAuthority.Issued, key keyOf: TestCertificateAuthority.Issued) throws {
                try? FileManager.default.removeItem(at: certificate)
                try? FileManager.default.removeItem(at: key)
                try FileManager.default.copyItem(at: issued.chainURL, to: certificate)
                try FileManager.default.copyItem(at: keyOf.keyURL, to: key)
            }
            try install(first, key: first)
            let configuration = """
                logLevel: info
                server:
                  host: 127.0.0.1
                  tls: { certificate: \(certificate.path), key: \(key.path), port: 0 }
                ingest:
                  autoCreate: true

                """
            let ca = authority.certificateURL.path
            try await OriginProcess.withRunning(configuration: configuration, label: "tls") { origin in
                let tlsPort = try #require(origin.tlsPort, "no https line: \(origin.child.standardOutput)")
                let https = "https://localhost:\(tlsPort)"
                func curl(_ arguments: [String]) async throws -> ToolOutput {
                    try await ChildProcess.run(
                        "curl", ["-sS", "--max-time", "10"] + arguments, in: origin.directory, timeout: .seconds(20))
                }
                func servedSerial() async throws -> String {
                    try await authority.servedSerialNumber(port: tlsPort)
                }

                // ffmpeg pushes over https (its tls options given; ffmpeg 5.1's HLS muxer does not pass them on to
                // its connections, see docs/security.md).
                guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("no ffmpeg") }
                let rendition = FFmpeg.PushedRendition(name: "hi", width: 640, height: 360, videoBitrate: "500k")
                let encoder = try ChildProcess(
                    executable: ffmpeg,
                    arguments: FFmpeg.sourceArguments + FFmpeg.encodingArguments(rendition) + [
                        "-f", "hls", "-hls_time", "2", "-hls_list_size", "6", "-hls_flags", "delete_segments",
                        "-method", "PUT", "-http_persistent", "1", "-ca_file", ca, "-tls_verify", "1",
                        "\(https)/ingest/secure/hi/index.m3u8",
                    ], directory: origin.directory, label: "encoder-https")
                defer { encoder.signal(SIGKILL) }

                // curl reads the live playlist and a segment over https; the same bytes come over plain HTTP.
                var playlist: MediaPlaylist?
                try await waitUntil("3 segments over https", timeout: .seconds(25), interval: .milliseconds(250)) {
                    let answer = try await curl(["--cacert", ca, "\(https)/live/secure/hi/index.m3u8"])
                    playlist = try? MediaPlaylist.parse(answer.standardOutput)
                    return (playlist?.segments.count ?? 0) >= 3
                }
                let listed = try #require(playlist)
                let segmentPath = "/live/secure/hi/\(listed.segments[1].uri)"
                let overTLS = try await curl(["--cacert", ca, "-o", "-", "\(https)\(segmentPath)"])
                #expect(overTLS.status == 0, "\(overTLS.standardError)")
                let overHTTP = try await HTTPClient(port: origin.port).get(segmentPath)
                #expect(overHTTP.status == 200)
                #expect(overTLS.standardOutputData.count > 10_000)
                #expect(
                    overTLS.standardOutputData == Data(overHTTP.body), "segment bytes differ between http and https")

                // ffprobe reads the live stream over https, verifying the certificate against the CA.
                let probe = try await ChildProcess.run(
                    "ffprobe",
                    [
                        "-v", "error", "-ca_file", ca, "-tls_verify", "1", "-show_entries", "stream=codec_name",
                        "-of", "csv=p=0", "\(https)/live/secure/index.m3u8",
                    ], in: origin.directory, timeout: .seconds(30))
                #expect(probe.status == 0, "\(probe.standardError)")
                #expect(
                    probe.standardOutput.contains("h264") && probe.standardOutput.contains("aac"),
                    "\(probe.standardOutput)")

                // Clients without the CA refuse the certificate.
                let untrusting = try await curl(["\(https)/live/secure/hi/index.m3u8"])
                #expect(
                    untrusting.status == 60, "curl without the CA: \(untrusting.status) \(untrusting.standardError)")
                let untrustingProbe = try await ChildProcess.run(
                    "ffprobe", ["-v", "error", "-tls_verify", "1", "\(https)/live/secure/index.m3u8"],
                    in: origin.directory, timeout: .seconds(30))
                #expect(untrustingProbe.status != 0)
                #expect(
                    untrustingProbe.standardError.contains("failed verification"), "\(untrustingProbe.standardError)")
                #expect(try await servedSerial() == first.serialNumber)

                // A keep-alive connection opened before the renewal goes on across SIGHUP; new connections get the
                // renewed certificate.
                guard let python = ChildProcess.locate("python3") else { throw EndToEndError("no python3") }
                let reader = try ChildProcess(
                    executable: python,
                    arguments: ["-c", Self.keepAliveReader, "\(tlsPort)", ca, "/live/secure/hi/index.m3u8", "6"],
                    directory: origin.directory, label: "keepalive-reader")
                defer { reader.signal(SIGKILL) }
                try await waitUntil("the reader's first answer", timeout: .seconds(10)) {
                    !reader.standardOutput.isEmpty || !reader.isRunning
                }
                try install(renewed, key: renewed)
                origin.child.signal(SIGHUP)
                try await waitUntil("the renewed certificate", timeout: .seconds(10), interval: .milliseconds(200)) {
                    try await servedSerial() == renewed.serialNumber
                }
                #expect(await reader.wait(timeout: .seconds(15)) == 0, "\(reader.standardError)")
                let answers = reader.standardOutput.split(separator: "\n").map { $0.split(separator: " ") }
                #expect(answers.count >= 15, "\(reader.standardOutput)")
                #expect(answers.allSatisfy { $0.first == "200" }, "\(reader.standardOutput)")
                #expect(Set(answers.map { $0[1] }).count == 1, "the connection changed: \(reader.standardOutput)")
                #expect(
                    answers.allSatisfy { $0.last.map(String.init) == first.serialNumber }, "\(reader.standardOutput)")
                #expect(origin.child.standardError.contains("TLS certificate reloaded"), "\(origin.logTail())")

                // A key that is not the certificate's: 422 with the reason, the renewed certificate stays served.
                try install(renewed, key: other)
                let refused = try await curl([
                    "--cacert", ca, "-X", "POST", "-w", "\n%{http_code}", "\(https)/admin/reload",
                ])
                #expect(refused.standardOutput.hasSuffix("\n422"), "\(refused.standardOutput)")
                #expect(refused.standardOutput.contains("do not match"), "\(refused.standardOutput)")
                #expect(try await servedSerial() == renewed.serialNumber)

                // The push went on over https the whole time; plain HTTP serves the same playlist.
                let before = listed.mediaSequence + UInt64(listed.segments.count)
                let after = try MediaPlaylist.parse(
                    try await curl(["--cacert", ca, "\(https)/live/secure/hi/index.m3u8"]).standardOutput)
                #expect(after.mediaSequence + UInt64(after.segments.count) > before)
                #expect(!after.segments.contains { $0.gap || $0.discontinuity }, "\(after.render())")
                #expect(try await HTTPClient(port: origin.port).get("/live/secure/hi/index.m3u8").status == 200)
                #expect(encoder.isRunning, "ffmpeg stopped: \(encoder.standardError)")
                print(
                    "tls: pushed and read over https; keep-alive connection kept serial \(first.serialNumber) over "
                        + "\(answers.count) requests across SIGHUP, new connections \(renewed.serialNumber); "
                        + "broken key refused 422")
            }
        }
    }
}
