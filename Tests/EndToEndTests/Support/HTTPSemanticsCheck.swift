import Foundation
import TestSupport

/// The HTTP answers of a live channel checked once, exactly as sent: validators (304), gzip, HEAD, byte ranges and
/// 404s with CORS and a short body.
struct HTTPSemanticsCheck {
    let client: HTTPClient
    let directory: URL
    private(set) var problems: [String] = []
    private(set) var checks = 0

    init(client: HTTPClient, directory: URL) {
        self.client = client
        self.directory = directory
    }

    private mutating func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
        checks += 1
        if !condition { problems.append(message()) }
    }

    /// Conditional GET and gzip of a playlist. The playlist may change between two requests: each pair is retried
    /// until both answers carry the same ETag.
    mutating func checkPlaylist(_ path: String) async throws {
        var done = false
        for _ in 0..<5 where !done {
            let plain = try await client.get(path)
            expect(plain.status == 200, "GET \(path): \(plain.status)")
            guard let etag = plain["ETag"] else {
                expect(false, "GET \(path): no ETag")
                return
            }
            let conditional = try await client.get(path, headers: [("If-None-Match", etag)])
            guard conditional["ETag"] == etag else { continue }
            expect(
                conditional.status == 304, "GET \(path) with If-None-Match \(etag): \(conditional.status), expected 304"
            )
            expect(conditional.body.isEmpty, "304 for \(path) has a body of \(conditional.body.count) bytes")
            expect(conditional["Access-Control-Allow-Origin"] == "*", "304 for \(path) without CORS")
            let gzipped = try await client.get(path, headers: [("Accept-Encoding", "gzip")])
            guard gzipped["ETag"] == etag else { continue }
            expect(gzipped.status == 200, "GET \(path) with gzip: \(gzipped.status)")
            expect(
                gzipped["Content-Encoding"] == "gzip",
                "GET \(path) with Accept-Encoding gzip: Content-Encoding \(gzipped["Content-Encoding"] ?? "none")")
            expect(
                gzipped["Content-Type"] == "application/vnd.apple.mpegurl",
                "gzip answer Content-Type \(gzipped["Content-Type"] ?? "none")")
            expect(
                gzipped["Vary"]?.lowercased().contains("accept-encoding") == true,
                "gzip answer without Vary: Accept-Encoding")
            let inflated = try await gunzip(gzipped.body)
            expect(
                inflated == plain.body,
                "gunzipped \(path) differs from the plain answer:\n\(String(decoding: inflated, as: UTF8.self))")
            expect(
                plain["Content-Encoding"] == nil, "plain GET \(path) has Content-Encoding \(plain["Content-Encoding"]!)"
            )
            done = true
        }
        expect(done, "\(path) changed under every one of 5 attempts to compare answers with one ETag")
    }

    /// HEAD, Range and If-None-Match of a segment.
    mutating func checkSegment(_ path: String) async throws {
        let whole = try await client.get(path)
        expect(whole.status == 200, "GET \(path): \(whole.status)")
        guard whole.status == 200 else { return }
        let head = try await client.request("HEAD", path)
        expect(head.status == 200, "HEAD \(path): \(head.status)")
        expect(
            head["Content-Length"] == "\(whole.body.count)",
            "HEAD \(path): Content-Length \(head["Content-Length"] ?? "none"), GET gave \(whole.body.count) bytes")
        expect(head.body.isEmpty, "HEAD \(path) sent \(head.body.count) body bytes")
        expect(head["Content-Type"] == "video/mp2t", "HEAD \(path): Content-Type \(head["Content-Type"] ?? "none")")
        expect(head["Access-Control-Allow-Origin"] == "*", "HEAD \(path) without CORS")

        let range = try await client.get(path, headers: [("Range", "bytes=0-187")])
        expect(range.status == 206, "GET \(path) Range: bytes=0-187: \(range.status), expected 206")
        expect(range.body.count == 188, "Range: bytes=0-187 gave \(range.body.count) bytes, expected 188")
        expect(Array(range.body) == Array(whole.body.prefix(188)), "Range: bytes=0-187 is not the first 188 bytes")
        expect(range.body.first == 0x47, "the first TS packet does not start with the sync byte")
        expect(
            range["Content-Range"] == "bytes 0-187/\(whole.body.count)",
            "Content-Range \(range["Content-Range"] ?? "none")")
        expect(range["Access-Control-Allow-Origin"] == "*", "206 without CORS")

        if let etag = whole["ETag"] {
            let conditional = try await client.get(path, headers: [("If-None-Match", etag)])
            expect(
                conditional.status == 304, "GET \(path) with If-None-Match \(etag): \(conditional.status), expected 304"
            )
            expect(conditional.body.isEmpty, "304 for \(path) has a body")
        } else {
            expect(false, "GET \(path): no ETag")
        }
    }

    /// Unknown resources answer 404 with CORS and a short text body.
    mutating func checkNotFound(_ path: String) async throws {
        let response = try await client.get(path)
        expect(response.status == 404, "GET \(path): \(response.status), expected 404")
        expect(response["Access-Control-Allow-Origin"] == "*", "404 for \(path) without CORS")
        expect(
            !response.body.isEmpty && response.body.count <= 256,
            "404 for \(path): body of \(response.body.count) bytes, expected a short message")
    }

    private func gunzip(_ bytes: [UInt8]) async throws -> [UInt8] {
        let file = directory.appendingPathComponent("playlist-\(UUID().uuidString).gz")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try await ChildProcess.run("gzip", ["-dc", file.path], in: directory)
        guard output.status == 0 else { throw EndToEndError("gzip -dc failed: \(output.standardError)") }
        return Array(output.standardOutput.utf8)
    }
}
