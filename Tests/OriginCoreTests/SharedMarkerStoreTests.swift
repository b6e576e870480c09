import Foundation
import Glibc
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import Markers
import SharedBytes
import Synchronization
import TestSource
import TestSupport
import Testing

@testable import OriginCore

/// Marker stores of two origins over the same shared books (the logic `GroupDatabase` serves with PostgreSQL; here
/// the books are kept in memory so that a race and an outage can be staged exactly; EndToEndTests.SharedMarkerTests
/// runs the same against a real PostgreSQL).
@Suite("Shared marker books: changes made on the stored book, retried on a race, refused while unreachable")
struct SharedMarkerStoreTests {
    /// Books in memory with the semantics of `GroupDatabase`: versioned rows, a save only over the version read.
    final class Books: SharedMarkerBooks {
        struct State {
            var rows: [String: SharedMarkerBook] = [:]
            var reachable = true
            /// Run once before the next save: another origin's write landing between a load and a save.
            var beforeNextSave: ((inout [String: SharedMarkerBook]) -> Void)?
            var saves = 0
            /// Loads wait while this is set: a database that holds every query (a slow or stalled server).
            var loadsHeld = false
            /// While unreachable: the database comes back by itself after refusing this many more loads.
            var reachableAfterRefusedLoads: Int?
            /// Loads refused while unreachable.
            var refusedLoads = 0
        }
        let state = Mutex(State())

        func load(channel: String) throws(MarkerError) -> SharedMarkerBook? {
            while state.withLock({ $0.loadsHeld }) { usleep(1000) }
            let (reachable, row) = state.withLock { state in
                let answer = (state.reachable, state.rows[channel])
                if !state.reachable { state.refusedLoads += 1 }
                if !state.reachable, let left = state.reachableAfterRefusedLoads {
                    state.reachableAfterRefusedLoads = left - 1
                    if left <= 1 { state.reachable = true }
                }
                return answer
            }
            guard reachable else { throw MarkerError(.unavailable, field: nil, "marker database unavailable: down") }
            return row
        }

        func save(channel: String, book: MarkerBook, replacing version: Int64?) throws(MarkerError) -> Int64? {
            let outcome = state.withLock { state -> Int64?? in
                guard state.reachable else { return .none }
                if let race = state.beforeNextSave {
                    state.beforeNextSave = nil
                    race(&state.rows)
                }
                state.saves += 1
                let stored = state.rows[channel]?.version
                guard stored == version else { return .some(nil) }
                let next = (stored ?? 0) + 1
                state.rows[channel] = SharedMarkerBook(book: book, version: next)
                return .some(next)
            }
            guard let outcome else {
                throw MarkerError(.unavailable, field: nil, "marker database unavailable: down")
            }
            return outcome
        }

        var reachability: (reachable: Bool, lastError: String?) {
            state.withLock { ($0.reachable, $0.reachable ? nil : "down") }
        }
    }

    static let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    static let now: Int64 = 1_800_000_000_000

    /// An open marker (no duration yet: a PATCH closes it), planned for 30 s.
    static func request(_ id: String) -> MarkerRequest {
        MarkerRequest(
            id: id, classAttribute: "com.example.ad", startDate: ProgramDateTime(millisecondsSince1970: now),
            plannedDuration: 30)
    }

    static func add(_ id: String, to store: MarkerStore) throws(MarkerError) -> Bool {
        try store.change { book throws(MarkerError) in
            let (marker, created) = try book.add(request(id), nowMilliseconds: now)
            return (marker, changed: created)
        }.changed
    }

    @Test func aRefreshThatCouldNotReadTheBooksIsTriedAgainUntilItCan() async throws {
        let books = Books()
        let first = MarkerStore(shared: books, channel: "ch", logger: Self.logger)
        let second = MarkerStore(shared: books, channel: "ch", logger: Self.logger)
        #expect(try Self.add("a", to: first))
        // The other origin hears of the change while the books cannot be read, and hears nothing after.
        books.state.withLock { $0.reachable = false }
        final class Count: Sendable { let value = Atomic<Int>(0) }
        let later = Count()
        let changedAtOnce = second.refresh(laterChange: { later.value.add(1, ordering: .relaxed) })
        #expect(!changedAtOnce)
        #expect(second.book.markers["a"] == nil)
        try await Task.sleep(for: .milliseconds(700))
        books.state.withLock { $0.reachable = true }
        try await waitUntil("the failed refresh to be tried again", timeout: .seconds(5)) {
            second.book.markers["a"] != nil
        }
        try await waitUntil("the caller to hear of the later change") { later.value.load(ordering: .relaxed) == 1 }
    }

    @Test func aChangeOnOneOriginSeesWhatAnotherStoredAndTheOtherSeesItAfterARefresh() throws {
        let books = Books()
        let first = MarkerStore(shared: books, channel: "ch", logger: Self.logger)
        let second = MarkerStore(shared: books, channel: "ch", logger: Self.logger)
        #expect(try Self.add("ad-1", to: first))
        // The second origin never heard of it, yet a PATCH there closes it: the change is made on the stored book.
        let (closed, changed) = try second.change { book throws(MarkerError) in
            let (marker, changed) = try book.close(
                id: "ad-1", patch: MarkerPatch(duration: 12), nowMilliseconds: Self.now + 1_000)
            return (marker, changed: changed)
        }
        #expect(changed && closed.dateRange.duration == 12)
        #expect(second.book.markers["ad-1"]?.dateRange.duration == 12)
        // The same post again on the second origin is an idempotent repeat, not a second marker.
        #expect(try Self.add("ad-1", to: second) == false)
        #expect(first.book.markers["ad-1"]?.dateRange.duration == nil)
        #expect(first.refresh())
        #expect(first.book.markers["ad-1"]?.dateRange.duration == 12)
        #expect(first.refresh() == false, "an unchanged stored book is not shown again")
    }

    @Test func aWriteThatLandsBetweenReadAndSaveIsReadAgainAndKept() throws {
        let books = Books()
        let first = MarkerStore(shared: books, channel: "ch", logger: Self.logger)
        let second = MarkerStore(shared: books, channel: "ch", logger: Self.logger)
        #expect(try Self.add("ad-1", to: first))
        books.state.withLock { state in
            state.beforeNextSave = { rows in
                // Another origin adds ad-2 after `second` read the book and before it saves.
                var book = rows["ch"]!.book
                _ = try? book.add(Self.request("ad-2"), nowMilliseconds: Self.now)
                rows["ch"] = SharedMarkerBook(book: book, version: rows["ch"]!.version + 1)
            }
        }
        #expect(try Self.add("ad-3", to: second))
        let stored = try #require(try books.load(channel: "ch"))
        #expect(Set(stored.book.markers.keys) == ["ad-1", "ad-2", "ad-3"])
        #expect(Set(second.book.markers.keys) == ["ad-1", "ad-2", "ad-3"])
        #expect(books.state.withLock { $0.saves } == 3, "one first save, one refused by the race, one retried")
    }

    @Test func whileTheBooksAreUnreachableChangesAreRefusedAndTheKnownMarkersStay() throws {
        let books = Books()
        let store = MarkerStore(shared: books, channel: "ch", logger: Self.logger)
        #expect(try Self.add("ad-1", to: store))
        books.state.withLock { $0.reachable = false }
        #expect(throws: MarkerError.self) { try Self.add("ad-2", to: store) }
        do {
            _ = try Self.add("ad-2", to: store)
        } catch {
            #expect(error.reason == .unavailable)
            #expect(error.message.contains("unavailable"))
        }
        #expect(store.refresh() == false)
        #expect(Set(store.book.markers.keys) == ["ad-1"], "the markers known stay visible")
        #expect(store.writeFailure?.contains("unavailable") == true, "the status says why")
        books.state.withLock { $0.reachable = true }
        #expect(try Self.add("ad-2", to: store))
        #expect(store.writeFailure == nil)
        #expect(Set(store.book.markers.keys) == ["ad-1", "ad-2"])
    }

    @Test func aChannelCreatedByAPushReadsTheMarkersTheGroupAlreadyHasForIt() async throws {
        let books = Books()
        let elsewhere = MarkerStore(shared: books, channel: "news", logger: Self.logger)
        #expect(try Self.add("ad-1", to: elsewhere))
        var configuration = OriginConfiguration()
        configuration.ingest.autoCreate = true
        let clock = ManualClock()
        let origin = try Origin(
            configuration: configuration, clock: clock, logger: Self.logger, sharedMarkers: books)
        var video = try TestStreamGenerator(profile: try #require(TestSourceProfile.named("180p")), segmentDuration: 2)
        clock.advance(seconds: 2)
        _ = try origin.ingest(
            channel: "news", rendition: "180p", fileName: "0.ts", body: SharedBytes(video.nextSegment().bytes))
        let channel = try #require(origin.channel(named: "news"))
        try await waitUntil("the created channel to read the shared markers", timeout: .seconds(5)) {
            channel.marker(id: "ad-1") != nil
        }
    }

    /// An origin with one channel `ch` (rendition `hi`) over `books`, for the cues read from pushes.
    static func cueOrigin(_ books: Books, clock: ManualClock) throws -> Origin {
        try Origin(
            configuration: OriginConfiguration(channels: [
                ChannelConfiguration(
                    name: "ch", renditions: [RenditionConfiguration(name: "hi")], targetDuration: 2,
                    window: .segments(20))
            ]), clock: clock, logger: logger, sharedMarkers: books)
    }

    @Test func aCueReadFromAPushIsStoredInTheSharedBookWithoutHoldingThePush() async throws {
        let books = Books()
        books.state.withLock { $0.loadsHeld = true }
        defer { books.state.withLock { $0.loadsHeld = false } }
        let clock = ManualClock()
        let origin = try Self.cueOrigin(books, clock: clock)
        let bytes = SharedBytes(try InbandCueIngestTests.segment())
        clock.advance(seconds: 1)
        let answered = Atomic<Bool>(false)
        Thread.detachNewThread {
            _ = try? origin.ingest(channel: "ch", rendition: "hi", fileName: "0.ts", body: bytes)
            answered.store(true, ordering: .sequentiallyConsistent)
        }
        try await waitUntil("the push to be answered while the marker database holds every query", timeout: .seconds(5)) {
            answered.load(ordering: .sequentiallyConsistent)
        }
        let channel = try #require(origin.channel(named: "ch"))
        #expect(channel.allMarkers.isEmpty)
        books.state.withLock { $0.loadsHeld = false }
        try await waitUntil("the cues to reach the shared book once it answers", timeout: .seconds(5)) {
            channel.marker(id: "scte35-00001001-0055dfa48") != nil
        }
        #expect(books.state.withLock { $0.rows["ch"]?.book.markers.count } == 2)
    }

    @Test func aCueReadWhileTheSharedBookIsUnreachableIsStoredOnceItAnswersAgain() async throws {
        let books = Books()
        // Unreachable for the channel's first read of the shared book and the cue's first attempt; the database
        // comes back by itself then (no test timing decides whether the retries have run out meanwhile).
        books.state.withLock {
            $0.reachable = false
            $0.reachableAfterRefusedLoads = 2
        }
        let clock = ManualClock()
        let origin = try Self.cueOrigin(books, clock: clock)
        clock.advance(seconds: 1)
        _ = try origin.ingest(
            channel: "ch", rendition: "hi", fileName: "0.ts", body: SharedBytes(try InbandCueIngestTests.segment()))
        let channel = try #require(origin.channel(named: "ch"))
        try await waitUntil("the cues to reach the shared book once it answers again", timeout: .seconds(5)) {
            channel.marker(id: "scte35-00001001-0055dfa48") != nil
        }
        #expect(books.state.withLock { $0.rows["ch"]?.book.markers.count } == 2)
        #expect(channel.status().inbandCues?.bookFailures == 0)
    }

    @Test func aCueWaitingForTheSharedBookHoldsNoBackgroundThreadUntilItsRetry() async throws {
        let books = Books()
        let clock = ManualClock()
        // Reachable for the channel's first read (no refresh retries load meanwhile), then down for the cue.
        let origin = try Self.cueOrigin(books, clock: clock)
        let channel = try #require(origin.channel(named: "ch"))
        books.state.withLock { $0.reachable = false }
        clock.advance(seconds: 1)
        _ = try origin.ingest(
            channel: "ch", rendition: "hi", fileName: "0.ts", body: SharedBytes(try InbandCueIngestTests.segment()))
        try await waitUntil("the cue's first attempt to be refused", timeout: .seconds(20)) {
            books.state.withLock { $0.refusedLoads } >= 1
        }
        // No background-work thread may sleep on the cue's behalf between its attempts (a sleeping one kept the lane
        // running for 15.5 s: 0.5 + 1 + 2 + 4 + 8; the 10 s bound stays under that however loaded the run).
        try await waitUntil("the lane to wait for its retry without running", timeout: .seconds(10)) {
            !channel.inbandCueLane.isRunning
        }
        books.state.withLock { $0.reachable = true }
        try await waitUntil("the retried cue to reach the shared book", timeout: .seconds(12)) {
            channel.marker(id: "scte35-00001001-0055dfa48") != nil
        }
        #expect(books.state.withLock { $0.rows["ch"]?.book.markers.count } == 2)
        #expect(channel.status().inbandCues?.bookFailures == 0)
    }
}
