import Logging
import MicroHTTPD
import OriginCore
import OriginServer
import SharedBytes

/// The origin's request handler, as libmicrohttpd would call it: routing, `/live` (Range, conditional headers),
/// `/ingest` (bodies probed as media or parsed as playlist hints), `/admin` (JSON bodies: the outage request), and
/// `/healthz`, `/metrics`.
///
/// Input: `METHOD SP TARGET LF`, header lines `Name: value LF`, an empty line, then the body (sent when the handler
/// asks for one). The client is a loopback client (so the admin API answers without a token), except for inputs
/// whose size is a multiple of 3: those come from a remote address, so the refusals of `AccessPolicy` are fuzzed too
/// (channel `news` takes token `n3ws-token`, `sport` takes `sp0rt-token`; the others loopback pushes only).
/// One origin lives for the whole run: a test-source channel `demo` (two renditions, three segments in the window)
/// plus auto-created channels, Low-Latency ones (a POST streams its body in pieces and is cut into parts). So that
/// state stays bounded, it is rebuilt every `rebuildEvery` inputs.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeBufferPointer(start: data, count: size)
    var lines: [Substring] = []
    var bodyStart = size
    var lineStart = 0
    var index = 0
    while index < size {
        if raw[index] == UInt8(ascii: "\n") {
            let line = String(decoding: UnsafeBufferPointer(rebasing: raw[lineStart..<index]), as: UTF8.self)
            lineStart = index + 1
            if line.isEmpty, !lines.isEmpty {
                bodyStart = index + 1
                break
            }
            lines.append(Substring(line))
        }
        index += 1
    }
    if index == size, lineStart < size {
        lines.append(Substring(String(decoding: UnsafeBufferPointer(rebasing: raw[lineStart...]), as: UTF8.self)))
    }
    guard let requestLine = lines.first else { return 0 }
    let parts = requestLine.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
    let method = String(parts[0])
    let target = parts.count > 1 ? parts[1] : "/"
    let question = target.firstIndex(of: "?")
    let path = String(target[..<(question ?? target.endIndex)])
    var query: [(name: String, value: String?)] = []
    if let question {
        for argument in target[target.index(after: question)...].split(separator: "&") {
            let pair = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            query.append((name: String(pair[0]), value: pair.count > 1 ? String(pair[1]) : nil))
        }
    }
    var headers = HTTPHeaders()
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        let value = line[line.index(after: colon)...].drop(while: { $0 == " " })
        headers.append(name: String(line[..<colon]), value: String(value))
    }
    let request = HTTPRequestHead(
        method: method, path: path, query: query, headers: headers,
        remoteAddress: size % 3 == 0 ? "192.0.2.1" : "127.0.0.1")
    let body = SharedBytes(UnsafeBufferPointer(rebasing: raw[bodyStart...]))

    let handler = Harness.shared.next()
    switch handler.handle(request) {
    case .respond(let response):
        consume(response)
    case .respondPrepared:
        break
    case .receiveBody(let limit, let complete):
        if body.count <= limit { consume(complete(body)) }
    case .streamBody(let limit, let receiver):
        stream(body, limit: limit, to: receiver)
    case .suspend, .receiveBodyThenSuspend:
        // A long poll, or a database call moved off the thread: answered later from another thread through a
        // responder only the server can make (the harness has no database.url, so it gets no database call).
        break
    }
    return 0
}

/// Hands the body to a streaming receiver as libmicrohttpd would: in pieces (three uneven ones, so cuts fall inside
/// packets), stopping at the receiver's early answer, abandoning past the limit as the server does (413).
private func stream(_ body: SharedBytes, limit: Int, to receiver: any HTTPBodyReceiver) {
    if body.count > limit {
        receiver.abandon()
        return
    }
    let cuts = [0, body.count / 3, body.count * 2 / 3 + 1, body.count].map { min($0, body.count) }
    for (start, end) in zip(cuts, cuts.dropFirst()) where start < end {
        let answered = body.withUnsafeBytes { raw in
            receiver.receive(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
        }
        if let answered {
            consume(answered)
            return
        }
    }
    consume(receiver.finish())
}

private func consume(_ response: HTTPResponse) {
    guard (100...599).contains(response.status) else {
        fatalError("handler answered with status \(response.status)")
    }
}

/// The origin under test and when to rebuild it.
private final class Harness: @unchecked Sendable {
    static let shared = Harness()
    static let rebuildEvery = 5_000

    private var handler: OriginHTTPHandler
    private var used = 0

    private init() { handler = Self.makeHandler() }

    func next() -> OriginHTTPHandler {
        used += 1
        if used > Self.rebuildEvery {
            handler = Self.makeHandler()
            used = 1
        }
        return handler
    }

    static func makeHandler() -> OriginHTTPHandler {
        let yaml = """
            tokens:
              - { name: news, secret: n3ws-token }
              - { name: sport, secret: sp0rt-token }
            limits: { channels: 40, renditionsPerChannel: 8, channelMemoryBytes: 33554432 }
            ingest:
              autoCreate: true
              maxSegmentBytes: 1048576
              defaults:
                segmentDuration: 2
                window: { segments: 3 }
                lowLatency: { partTarget: 0.5 }
            channels:
              - name: demo
                source: test-source
                segmentDuration: 2
                window: { segments: 3 }
                renditions:
                  - { name: 360p, profile: 360p }
                  - { name: 180p, profile: 180p }
              - { name: news, ingest: { tokens: [news], renditions: { low: [sport] } } }
              - { name: sport, ingest: { tokens: [sport] } }
            """
        do {
            let configuration = try ConfigurationFile.parse(yaml, source: "fuzz")
            let logger = Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() }
            let clock = ManualClock()
            let origin = try Origin(configuration: configuration.origin, clock: clock, logger: logger)
            for _ in 0..<160 {
                clock.advance(seconds: 0.05)
                origin.tick()
            }
            return OriginHTTPHandler(
                origin: origin, configuration: configuration, metrics: RequestMetrics(), logger: logger)
        } catch {
            fatalError("fuzz harness set-up failed: \(error)")
        }
    }
}
