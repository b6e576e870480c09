// A client of the core (the HTTP server, the fuzzers) sees the values of the targets the core is built from: the
// ingest loop's snapshots and configuration, the markers, the journals.
@_exported import IngestLoop
@_exported import Markers
@_exported import Persistence
