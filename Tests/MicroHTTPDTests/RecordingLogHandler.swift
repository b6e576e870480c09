import Logging

/// A log handler that keeps the messages it is given (tests check what the server logged).
struct RecordingLogHandler: LogHandler {
    let messages: Recorder<String>?
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
        function: String, line: UInt
    ) {
        messages?.record(message.description)
    }
}

extension Logger {
    /// A logger whose messages go to `messages` (none kept if nil).
    static func recording(into messages: Recorder<String>?) -> Logger {
        Logger(label: "microhttpd-tests") { _ in RecordingLogHandler(messages: messages) }
    }
}
