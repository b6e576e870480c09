import SharedBytes
import Testing

@testable import OriginCore

/// The lock order written at `Channel.state`, checked in debug builds by `RankedMutex`.
@Suite struct LockOrderTests {
    @Test func locksTakenInRisingRankAreAllowed() {
        let writer = RankedMutex(1, rank: .markerWriter)
        let state = RankedMutex(2, rank: .channelState)
        let visible = RankedMutex(3, rank: .markerVisible)
        let published = RankedMutex(4, rank: .channelPublished)
        let sum = writer.withLock { w in
            state.withLock { s in visible.withLock { v in published.withLock { p in w + s + v + p } } }
        }
        #expect(sum == 10)
        // Released in turn: the same locks again, one at a time, in any order.
        #expect(published.withLock { $0 } + writer.withLock { $0 } == 5)
    }

    @Test func recordingLocksComeBeforeTheChannelStateAndTheStoreFilesAfterIt() {
        #expect(LockRank.recordingWriter < .recordingEviction)
        #expect(LockRank.recordingEviction < .channelState)
        #expect(LockRank.channelState < .channelStoreFiles)
    }

    #if DEBUG
        @Test func takingTheMarkerWriterUnderTheChannelStateStopsTheProcess() async {
            await #expect(processExitsWith: .failure) {
                let state = RankedMutex(0, rank: .channelState)
                let writer = RankedMutex(0, rank: .markerWriter)
                state.withLock { _ in writer.withLock { _ in } }
            }
        }

        @Test func takingARecordingLockUnderTheChannelStateStopsTheProcess() async {
            await #expect(processExitsWith: .failure) {
                let state = RankedMutex(0, rank: .channelState)
                let eviction = RankedMutex(0, rank: .recordingEviction)
                state.withLock { _ in eviction.withLock { _ in } }
            }
        }

        @Test func takingTheChannelDirectoryUnderAnyRankedLockStopsTheProcess() async {
            await #expect(processExitsWith: .failure) {
                let writer = RankedMutex(0, rank: .markerWriter)
                let directory = RankedMutex(0, rank: .originDirectory)
                writer.withLock { _ in directory.withLock { _ in } }
            }
        }

        @Test func twoLocksOfTheSameRankNestedStopTheProcess() async {
            await #expect(processExitsWith: .failure) {
                let published = RankedMutex(0, rank: .channelPublished)
                let note = RankedMutex(0, rank: .channelJournalNote)
                published.withLock { _ in note.withLock { _ in } }
            }
        }
    #endif
}
