import FuzzSupport
import HTTPPushInput
import LiveTimeline
import OriginCore

/// The streaming ingest path: pushes into a Low-Latency channel (PART-TARGET 0.5 s) delivered in pieces the fuzzer
/// chooses, as libmicrohttpd hands a body over, cut into parts and listed while they arrive (`StreamingPush`), the
/// clock moving between pieces and the ingest loop ticking between pushes.
///
/// Input: a settings byte (bit 0: fMP4, the first record is the init section pushed whole; bit 1: the last push is
/// abandoned half-way, as by a disconnect; the rest: clock steps), a seed for the piece lengths, then records
/// separated by `SEG|`. Every published playlist must parse and keep the target-duration rules.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let settings = data[0]
    let fragmented = settings & 1 != 0
    var pieces = Pieces(seed: data[1])
    var channel = ChannelConfiguration(name: "ll", renditions: [RenditionConfiguration(name: "v")])
    channel.lowLatency = LowLatencyConfiguration(partTarget: 0.5)
    let origin = OriginUnderFuzz(channels: [channel])
    var records = FuzzInput.records(UnsafeBufferPointer(start: data, count: size), skip: 2)
    if fragmented, !records.isEmpty {
        origin.push(channel: "ll", rendition: "v", file: "init.mp4", records.removeFirst())
    }
    for (index, body) in records.enumerated() {
        origin.advance(seconds: FuzzInput.step(settings >> 2, record: index))
        let file = "\(index).\(fragmented ? "m4s" : "ts")"
        let push: StreamingPush?
        do {
            push = try origin.origin.beginStreamingPush(channel: "ll", rendition: "v", fileName: file)
        } catch {
            continue
        }
        guard let push else {
            origin.push(channel: "ll", rendition: "v", file: file, body)
            continue
        }
        let abandons = settings & 2 != 0 && index == records.count - 1
        let stop = abandons ? body.count / 2 : body.count
        var fed = 0
        var refused = false
        while fed < stop, !refused {
            let end = min(stop, fed + pieces.next(maximum: 2048))
            origin.clock.advance(seconds: Double(pieces.next(maximum: 100)) / 1000)
            refused = body[fed..<end].withUnsafeBytes { push.receive($0) } != nil
            fed = end
        }
        if abandons {
            if !refused { push.abandon() }
        } else if !refused {
            _ = try? push.finish()
        }
        origin.origin.tick()
        origin.check()
    }
    origin.advance(seconds: 6)
    origin.check()
    return 0
}
