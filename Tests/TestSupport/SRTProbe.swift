internal import CSRT
import Glibc

/// A libsrt caller of the tests' own: connects with a stream id (and a passphrase) and reports the reject reason
/// (ffmpeg and srt-live-transmit print only "Application-defined rejection reason"); can send null packets (bytes
/// that carry no media).
public enum SRTProbe {
    public enum Outcome: Equatable, Sendable {
        /// The connected socket (an `SRTSOCKET`).
        case connected(Int32)
        /// The reject reason the caller's libsrt reports (`srt_getrejectreason`).
        case rejected(Int32)
    }

    /// `SRT_REJ_BADSECRET`, `SRT_REJ_UNSECURE`: the reasons of a failed key exchange.
    public static let badSecret = Int32(SRT_REJ_BADSECRET.rawValue)
    public static let unsecure = Int32(SRT_REJ_UNSECURE.rawValue)

    public static func connect(port: Int, streamID: String, passphrase: String? = nil) -> Outcome {
        srt_startup()
        let socket = srt_create_socket()
        _ = streamID.withCString { srt_setsockflag(socket, SRTO_STREAMID, $0, Int32(strlen($0))) }
        if let passphrase {
            _ = passphrase.withCString { srt_setsockflag(socket, SRTO_PASSPHRASE, $0, Int32(strlen($0))) }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                srt_connect(socket, $0, Int32(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result != SRT_ERROR else {
            let reason = srt_getrejectreason(socket)
            srt_close(socket)
            return .rejected(reason)
        }
        return .connected(socket)
    }

    public static func close(_ socket: Int32) { srt_close(socket) }

    /// Sends `payloads` SRT payloads of seven null packets (PID 0x1FFF), one every `intervalMicroseconds`: what a
    /// CBR encoder whose source died keeps sending. Returns false once a send fails (the origin closed the caller).
    public static func sendNullPackets(_ socket: Int32, payloads: Int, intervalMicroseconds: UInt32 = 20_000) -> Bool {
        var payload: [UInt8] = []
        for counter in 0..<7 {
            payload += [0x47, 0x1F, 0xFF, 0x10 | UInt8(counter)] + [UInt8](repeating: 0xFF, count: 184)
        }
        for _ in 0..<payloads {
            let sent = payload.withUnsafeBytes {
                srt_sendmsg(socket, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count), -1, 1)
            }
            if sent == SRT_ERROR { return false }
            usleep(intervalMicroseconds)
        }
        return true
    }
}
