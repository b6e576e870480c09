import Foundation
import LiveTimeline
import Logging
import Persistence
import Synchronization

/// What a reload changed (`Origin.reload`), by channel name.
public struct ReloadReport: Sendable, Hashable, Codable {
    /// Channels configured now and not before: started.
    public var added: [String] = []
    /// Channels configured before and not now: stopped (their stored media stays on disk).
    public var removed: [String] = []
    /// Channels whose settings changed: re-opened with the new ones, continuing their numbering.
    public var changed: [String] = []
    /// Channels left as they were.
    public var unchanged: [String] = []
    /// Settings that changed but take effect only when the origin restarts (the old values stay in force).
    public var needsRestart: [String] = []
    /// Channels whose new settings could not be applied, and why: they carry on with the old ones.
    public var failed: [String: String] = [:]

    public init() {}
}

/// Why a reload was refused as a whole (nothing changed).
public struct ReloadError: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// Reload without restart (docs/reload.md): channels added, removed or changed start, stop or change
/// without touching the others.
extension Origin {
    /// Applies new settings: configured channels that were not there start; channels no longer configured stop
    /// (channels created by pushes stay); a channel whose settings changed is re-opened with them from its journal and
    /// store, as after a restart of that channel alone (same MSNs, no lost segment: a push arriving meanwhile waits
    /// for it); the others are not touched. The data directory and the store's layout (`storage.sync`,
    /// `storage.segmentsPerChunk`) change only with a restart.
    /// - Throws: ``ReloadError`` (nothing changed) for an invalid or duplicate channel name.
    public func reload(_ requested: OriginConfiguration) throws(ReloadError) -> ReloadReport {
        try reloading.withLock { _ throws(ReloadError) -> ReloadReport in
            let old = configuration
            var new = requested
            var report = ReloadReport()
            Self.keepRestartOnlySettings(of: old, in: &new, report: &report)
            var names = Set<String>()
            for channel in new.channels {
                guard OriginNames.isValid(channel.name) else {
                    throw ReloadError("channel name '\(channel.name)' is not valid (1-64 of A-Z a-z 0-9 _ -)")
                }
                guard names.insert(channel.name).inserted else {
                    throw ReloadError("channel '\(channel.name)' is configured twice")
                }
            }
            let before = Dictionary(old.channels.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            var successors: [String: Channel] = [:]
            for settings in new.channels {
                let current = channel(named: settings.name)
                if current != nil, before[settings.name] == settings {
                    report.unchanged.append(settings.name)
                    continue
                }
                // Changed (or created by pushes and configured now): the old object writes its journal and stops
                // accepting first, so that its successor continues exactly from where it stopped.
                current?.retire()
                do {
                    let successor = try factory.configuredChannel(settings)
                    factory.readSharedMarkers(of: successor)
                    if let current { successor.continueFeeds(of: current) }
                    successors[settings.name] = successor
                    // What still reaches the retired object (a request that looked it up before) goes on here.
                    current?.forward(to: successor)
                    directory.channelReplaced()
                    if current != nil {
                        report.changed.append(settings.name)
                    } else {
                        report.added.append(settings.name)
                    }
                } catch {
                    current?.resume()
                    directory.channelReplaced()
                    report.failed[settings.name] = "\(error)"
                    // The channel keeps its old settings (or stays absent).
                    new.channels.removeAll { $0.name == settings.name }
                    if let previous = before[settings.name] { new.channels.append(previous) }
                }
            }
            let removed = old.channels.map(\.name).filter { !names.contains($0) && report.failed[$0] == nil }
            let retiring = removed.compactMap { channel(named: $0) }
            for channel in retiring { channel.retire() }
            report.removed = removed
            directory.change { directory in
                for (name, channel) in successors { directory.byName[name] = channel }
                for name in removed { directory.byName[name] = nil }
                let configured = new.channels.map(\.name).filter { directory.byName[$0] != nil }
                let others = directory.order.filter { directory.byName[$0] != nil && !configured.contains($0) }
                directory.order = configured + others
            }
            settings.withLock { $0 = new }
            logger.notice(
                "configuration reloaded",
                metadata: [
                    "added": "\(report.added)", "removed": "\(report.removed)", "changed": "\(report.changed)",
                    "needsRestart": "\(report.needsRestart)", "failed": "\(report.failed)",
                ])
            return report
        }
    }

    /// Puts back the settings only a restart changes, and names the ones that differed.
    private static func keepRestartOnlySettings(
        of old: OriginConfiguration, in new: inout OriginConfiguration, report: inout ReloadReport
    ) {
        if new.dataDirectory != old.dataDirectory {
            report.needsRestart.append("dataDirectory")
            new.dataDirectory = old.dataDirectory
        }
        if new.storage.sync != old.storage.sync {
            report.needsRestart.append("storage.sync")
            new.storage.sync = old.storage.sync
        }
        if new.storage.segmentsPerChunk != old.storage.segmentsPerChunk {
            report.needsRestart.append("storage.segmentsPerChunk")
            new.storage.segmentsPerChunk = old.storage.segmentsPerChunk
        }
    }
}
