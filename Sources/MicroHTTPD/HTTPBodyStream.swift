import CMicroHTTPD
public import SharedBytes
import Synchronization

/// Bytes of a response body produced after the response started (`HTTPBody.stream`): sent chunked (HTTP/1.0:
/// without length, the connection closes at the end) as they are appended. While no bytes are available the
/// connection is suspended: a waiting stream costs no thread and no polling.
///
/// Many connections may send one stream at once, each from its own position; the stream keeps every appended byte
/// until it is released.
public final class HTTPBodyStream: Sendable {
    /// How the body ends.
    enum Ending {
        case open
        case finished
        case failed
    }

    /// A connection waiting (or about to wait) for bytes.
    struct Waiter {
        let connection: ConnectionHandle
        /// MHD_suspend_connection has returned for it (a wake-up must resume it).
        var isSuspended: Bool
    }

    struct State {
        var chunks: [SharedBytes] = []
        /// Offset of each chunk's first byte in the body.
        var chunkStarts: [Int] = []
        var count = 0
        var ending = Ending.open
        /// Readers waiting for the next bytes, by `ObjectIdentifier` of their `StreamReader`.
        var waiters: [ObjectIdentifier: Waiter] = [:]
        /// Readers woken before they recorded their suspension: they resume themselves.
        var wokenBeforeSuspending: Set<ObjectIdentifier> = []
        /// Readers cut off by `HTTPServer.stop()`.
        var cut: Set<ObjectIdentifier> = []
    }

    let state = Mutex(State())

    /// An open stream with no bytes yet.
    public init() {}

    /// Adds bytes to the end of the body; wakes connections waiting for them. Any thread. Ignored once finished or
    /// failed.
    public func append(_ bytes: SharedBytes) {
        guard bytes.count > 0 else { return }
        let toResume = state.withLock { state -> [ConnectionHandle] in
            guard case .open = state.ending else { return [] }
            state.chunkStarts.append(state.count)
            state.chunks.append(bytes)
            state.count += bytes.count
            return Self.wakeAll(&state)
        }
        for connection in toResume { MHD_resume_connection(connection.pointer) }
    }

    /// The body is complete: the chunked response ends once everything appended is sent.
    public func finish() {
        end(.finished)
    }

    /// The body cannot be completed: the response is cut off (the client sees an incomplete chunked body).
    public func fail() {
        end(.failed)
    }

    /// Bytes appended so far.
    public var count: Int { state.withLock { $0.count } }

    private func end(_ ending: Ending) {
        let toResume = state.withLock { state -> [ConnectionHandle] in
            guard case .open = state.ending else { return [] }
            state.ending = ending
            return Self.wakeAll(&state)
        }
        for connection in toResume { MHD_resume_connection(connection.pointer) }
    }

    /// Takes every waiter out; returns the connections to resume now (those already suspended). The others resume
    /// themselves once they have suspended: each suspension is undone exactly once.
    private static func wakeAll(_ state: inout State) -> [ConnectionHandle] {
        guard !state.waiters.isEmpty else { return [] }
        var toResume: [ConnectionHandle] = []
        for (reader, waiter) in state.waiters {
            if waiter.isSuspended {
                toResume.append(waiter.connection)
            } else {
                state.wokenBeforeSuspending.insert(reader)
            }
        }
        state.waiters.removeAll(keepingCapacity: true)
        return toResume
    }

    /// What a reader at `position` gets: copied bytes, the end, or nothing yet (then it is registered as waiting).
    enum Read {
        case bytes(Int)
        case end
        case error
        case wait
    }

    /// Copies up to `capacity` bytes from `position` into `buffer`; with none available and the stream open,
    /// registers `reader` as waiting on `connection` (the caller then suspends the connection and calls
    /// `didSuspend`).
    func read(
        _ reader: ObjectIdentifier, connection: ConnectionHandle, at position: Int,
        into buffer: UnsafeMutableRawPointer, capacity: Int
    ) -> Read {
        state.withLock { state in
            if state.cut.contains(reader) { return .error }
            if position < state.count {
                var chunkIndex = Self.chunkIndex(containing: position, starts: state.chunkStarts)
                var copied = 0
                var offset = position
                while copied < capacity && chunkIndex < state.chunks.count {
                    let chunk = state.chunks[chunkIndex]
                    let inChunk = offset - state.chunkStarts[chunkIndex]
                    let length = min(chunk.count - inChunk, capacity - copied)
                    (buffer + copied).copyMemory(from: chunk.unsafeBaseAddress + inChunk, byteCount: length)
                    copied += length
                    offset += length
                    chunkIndex += 1
                }
                return .bytes(copied)
            }
            switch state.ending {
            case .finished: return .end
            case .failed: return .error
            case .open:
                state.waiters[reader] = Waiter(connection: connection, isSuspended: false)
                return .wait
            }
        }
    }

    /// Records that the reader's connection is suspended; true if it was woken meanwhile and must resume itself.
    func didSuspend(_ reader: ObjectIdentifier) -> Bool {
        state.withLock { state in
            if state.wokenBeforeSuspending.remove(reader) != nil { return true }
            state.waiters[reader]?.isSuspended = true
            return false
        }
    }

    /// Ends one reader's response with an error (server stopping); wakes it if it waits.
    func cut(_ reader: ObjectIdentifier) {
        let toResume = state.withLock { state -> ConnectionHandle? in
            state.cut.insert(reader)
            guard let waiter = state.waiters.removeValue(forKey: reader) else { return nil }
            if waiter.isSuspended { return waiter.connection }
            state.wokenBeforeSuspending.insert(reader)
            return nil
        }
        if let toResume { MHD_resume_connection(toResume.pointer) }
    }

    /// Forgets a reader whose response is gone.
    func forget(_ reader: ObjectIdentifier) {
        state.withLock { state in
            state.cut.remove(reader)
            state.wokenBeforeSuspending.remove(reader)
            state.waiters.removeValue(forKey: reader)
        }
    }

    private static func chunkIndex(containing position: Int, starts: [Int]) -> Int {
        var low = 0
        var high = starts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= position { low = middle } else { high = middle - 1 }
        }
        return low
    }
}

/// One connection's reading of an `HTTPBodyStream`: the `cls` of its libmicrohttpd content-reader response (one
/// response per connection: the reader must know its connection to suspend it).
final class StreamReader: Sendable {
    let stream: HTTPBodyStream
    /// nil for a response never queued on a connection (a `PreparedResponse`): reading it is an error.
    let connection: ConnectionHandle?
    let context: ServerContext?
    /// Registered in the context's registry (so `stop()` can cut it off); only touched on the connection's thread.
    private let isTracked = Atomic<Bool>(false)

    init(stream: HTTPBodyStream, connection: ConnectionHandle?, context: ServerContext?) {
        self.stream = stream
        self.connection = connection
        self.context = context
    }

    /// The content reader: bytes, end of stream, or 0 after suspending the connection until bytes come.
    func read(at position: UInt64, into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let endOfStream = -1
        let endWithError = -2
        guard let connection, let context, capacity > 0 else { return endWithError }
        let id = ObjectIdentifier(self)
        switch stream.read(id, connection: connection, at: Int(position), into: buffer, capacity: capacity) {
        case .bytes(let count): return count
        case .end: return endOfStream
        case .error: return endWithError
        case .wait:
            if !isTracked.load(ordering: .relaxed) {
                guard context.track(self) else {
                    // Stopping: no new suspension; the waiter entry goes with the response.
                    stream.forget(id)
                    return endWithError
                }
                isTracked.store(true, ordering: .relaxed)
            }
            // The content reader is one of the two places microhttpd.h allows MHD_suspend_connection.
            MHD_suspend_connection(connection.pointer)
            if stream.didSuspend(id) { MHD_resume_connection(connection.pointer) }
            return 0
        }
    }

    /// Ends this reader's response with an error (server stopping).
    func cut() {
        stream.cut(ObjectIdentifier(self))
    }

    /// The response is destroyed (libmicrohttpd is done with the connection's answer).
    func release() {
        stream.forget(ObjectIdentifier(self))
        if isTracked.load(ordering: .relaxed) { context?.untrack(self) }
    }
}

/// MHD_ContentReaderCallback of a stream response.
func readStream(
    _ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int
) -> Int {
    guard let cls, let buffer else { return -2 }
    return Unmanaged<StreamReader>.fromOpaque(cls).takeUnretainedValue().read(
        at: position, into: UnsafeMutableRawPointer(buffer), capacity: capacity)
}

/// MHD_ContentReaderFreeCallback of a stream response.
func releaseStreamReader(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    let reader = Unmanaged<StreamReader>.fromOpaque(cls).takeRetainedValue()
    reader.release()
}

/// Receives a request body piece by piece as it arrives (`HTTPRequestAction.streamBody`), on the connection's
/// libmicrohttpd thread, in order.
public protocol HTTPBodyReceiver: AnyObject, Sendable {
    /// The next bytes of the body. Returning a response answers the request now: the rest of the body is not read
    /// and the connection closes after the answer.
    func receive(_ piece: UnsafeRawBufferPointer) -> HTTPResponse?
    /// The body is complete: the answer.
    func finish() -> HTTPResponse
    /// The request ended without `finish()` and without an answer from `receive`: the connection closed or timed
    /// out mid-body, the server stopped, or the body went over the limit (413). Called once, on the connection's
    /// libmicrohttpd thread; no answer is sent by the receiver.
    func abandon()
}
