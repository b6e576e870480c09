import CSRT
import Foundation
import Synchronization

/// Callers that pass the listen callback but then fail SRT's key exchange: a wrong passphrase (`SRT_REJ_BADSECRET`)
/// or none where one is set (`SRT_REJ_UNSECURE`), and the other way round.
///
/// libsrt runs the listen callback before the key exchange (the caller's KMREQ is read after it, in the same
/// handshake), and a caller refused there never reaches `srt_accept`: its socket is closed inside libsrt and
/// `srt_getrejectreason` on it answers nothing (the id is no longer mapped). What libsrt does report is a log line
/// of its own, at warning level, naming the socket the callback was given:
/// `@<id>:newConnection: connection rejected due to: INTERNAL REJECTION - ERROR:BADSECRET` (libsrt 1.5.1, Debian
/// 12; `srtcore/api.cpp`, `newConnection`). So the listener installs libsrt's log handler, watches the sockets its
/// callback admitted, and when that line names one, audits and counts the caller as any refusal.
///
/// That line is logged only where libsrt rolls back a new socket (`ERR_ROLLBACK`: closed, unmapped, the caller
/// answered with the rejection), never for a repeated handshake of a connected caller (`locatePeer` answers those
/// without a new socket or the callback). libsrt's other key-exchange lines (`HS KMREQ: Peer declares encryption,
/// but agent does not ...`, area `interpretSrtHandshake`, one of them for a caller it then admits) are not read. A
/// caller whose rejection is lost on the path and who repeats its handshake gets a new socket, judged again.
enum SRTHandshakeFailures {
    /// A socket the listen callback admitted, until `srt_accept` returns it or libsrt reports its rejection.
    struct Watched: Sendable {
        weak var listener: SRTListener?
        var sinceMilliseconds: Int64
    }

    private static let watched = Mutex<[SRTSOCKET: Watched]>([:])
    /// A watched socket neither accepted nor rejected after this long (the caller gave up mid-handshake) is forgotten.
    static let watchMilliseconds: Int64 = 30_000

    static func watch(_ socket: SRTSOCKET, for listener: SRTListener) {
        let now = SRTListener.nowMilliseconds()
        watched.withLock { watched in
            watched = watched.filter { now - $0.value.sinceMilliseconds < watchMilliseconds }
            watched[socket] = Watched(listener: listener, sinceMilliseconds: now)
        }
    }

    /// The socket was accepted (or closed by the listener): its handshake did not fail.
    static func forget(_ socket: SRTSOCKET) { _ = watched.withLock { $0.removeValue(forKey: socket) } }

    /// A line of libsrt's log: a watched socket's rejection goes to its listener.
    static func logged(area: String, message: String) {
        guard area == "newConnection", let (socket, code) = rejection(in: message) else { return }
        guard let entry = watched.withLock({ $0.removeValue(forKey: socket) }) else { return }
        entry.listener?.handshakeFailed(socket: socket, code: code)
    }

    /// The socket and reject code of libsrt's `@<id>:newConnection: connection rejected due to: <why> - <type>`
    /// line; nil for any other line.
    static func rejection(in message: String) -> (socket: SRTSOCKET, code: Int32)? {
        guard let at = message.firstIndex(of: "@"),
            let marker = message.range(of: ":newConnection: connection rejected", range: at..<message.endIndex),
            let socket = SRTSOCKET(message[message.index(after: at)..<marker.lowerBound])
        else { return nil }
        let type = message[marker.upperBound...].split(separator: " - ").last.map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let code: Int32 =
            switch type {
            case "ERROR:BADSECRET": Int32(SRT_REJ_BADSECRET.rawValue)
            case "ERROR:UNSECURE": Int32(SRT_REJ_UNSECURE.rawValue)
            default: Int32(SRT_REJ_UNKNOWN.rawValue)
            }
        return (socket, code)
    }
}

/// libsrt's log handler (process-wide, installed once by `SRTLibrary`): rejections of watched sockets go to their
/// listener; libsrt's critical lines still go to stderr as they did without a handler.
func srtLogHandler(
    opaque: UnsafeMutableRawPointer?, level: Int32, file: UnsafePointer<CChar>?, line: Int32,
    area: UnsafePointer<CChar>?, message: UnsafePointer<CChar>?
) {
    guard let message else { return }
    if level <= LOG_CRIT {
        FileHandle.standardError.write(Data(String(cString: message).utf8))
        return
    }
    guard let area, level == LOG_WARNING, strcmp(area, "newConnection") == 0 else { return }
    SRTHandshakeFailures.logged(area: "newConnection", message: String(cString: message))
}
