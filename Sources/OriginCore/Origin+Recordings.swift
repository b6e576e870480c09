public import Persistence

/// Recordings (live-to-VOD): the admin API's and the `/vod` route's entry points.
extension Origin {
    /// Creates a recording of a channel (POST). The same request again returns the stored recording with `created`
    /// false.
    /// - Throws: ``RecordingError``: `unknown` channel, `conflict`, `invalid`, `unprocessable`, `tooMany`,
    ///   `notPersisted`, `unavailable` (the group's database, with shared recordings).
    public func createRecording(
        _ request: RecordingRequest, channel name: String
    ) throws(RecordingError) -> (manifest: RecordingManifest, created: Bool) {
        guard let channel = channel(named: name) else {
            throw RecordingError(.unknown, "unknown channel '\(name)'")
        }
        return try recordings.create(request, channel: name, nowMilliseconds: clock.nowMilliseconds()) {
            channel.storeHeldFromMilliseconds()
        }
    }

    /// Deletes a recording (its manifest only: the bytes stay in the store, shared, until eviction).
    /// - Throws: `unknown`, `notPersisted`, `unavailable`.
    public func deleteRecording(id: String, channel: String) throws(RecordingError) {
        try recordings.delete(id: id, channel: channel)
    }

    /// A finished recording and its channel, finishing it now if its end passed (the tick may not have run yet).
    /// - Throws: `unknown` for an unknown recording or channel, `notFinished` before its contents are taken.
    public func finishedRecording(id: String) throws(RecordingError) -> (RecordingManifest, Channel) {
        guard var manifest = recordings.recording(id: id) else {
            throw RecordingError(.unknown, "unknown recording '\(id)'")
        }
        guard let channel = channel(named: manifest.channel) else {
            throw RecordingError(.unknown, "recording '\(id)': channel '\(manifest.channel)' is not running")
        }
        if manifest.contents == nil, let finished = finish(manifest, channel: channel) { manifest = finished }
        guard manifest.contents != nil else {
            throw RecordingError(
                .notFinished, "recording '\(id)' finishes at \(RecordingStore.date(manifest.endMilliseconds))")
        }
        return (manifest, channel)
    }

    /// The group's recordings changed (or may have, after the database came back): make this origin's the same
    /// (`RecordingStore.reconcile`). Makes database round trips: call it off the event loops and the tick's thread.
    public func sharedRecordingsChanged() {
        recordings.reconcile()
    }

    /// Takes the contents of every recording whose end passed and whose last slot closed. Called by `tick()`.
    func finishRecordings() {
        for manifest in recordings.due(nowMilliseconds: clock.nowMilliseconds()) {
            guard let channel = channel(named: manifest.channel) else { continue }
            _ = finish(manifest, channel: channel)
        }
    }

    private func finish(_ manifest: RecordingManifest, channel: Channel) -> RecordingManifest? {
        let now = clock.nowMilliseconds()
        guard manifest.endMilliseconds <= now,
            let contents = channel.recordingContents(
                startMilliseconds: manifest.startMilliseconds, endMilliseconds: manifest.endMilliseconds,
                nowMilliseconds: now)
        else { return nil }
        return recordings.finish(id: manifest.id, contents: contents)
    }
}
