// Package latencyfs simulates a slow or remote device for benchmarks and
// tests. FS (New) wraps a vfs.FS and delays the reads of its files as such
// a device would: each read waits ReadLatency ± ReadJitter (seeded) after
// its transfer, transfers share ReadBandwidth through one "busy until"
// clock, and latencies of concurrent reads overlap. Writes and metadata
// pass through (unless WriteLatency is set). shale bench runs over it with
// --env_read_latency_us.
//
// A file's ReadAt reads the wrapped file and then sleeps until the read's
// simulated deadline, so any reader of the file sees the delay, an
// AsyncReader too (through ReadAt on its goroutines). FS also implements
// vfs.AsyncReaderWrapper: the AsyncReader WrapAsyncReader returns hands the
// wrapped files to the reader it wraps, so io_uring reads them natively,
// and completes each request at its deadline, holding one slot of a
// simulated device queue (the reader's QueueDepth) from the moment the
// deadline is reserved until then. The DB wraps its reader this way
// whenever Options.FS implements vfs.AsyncReaderWrapper.
//
// On Linux the sleeps go through one waker thread sleeping in ppoll, since
// Go's timers round sub-millisecond sleeps up to about a millisecond; reads
// return about 50-100µs after their deadline there. Elsewhere they are the
// runtime's timers.
//
// Deadlines: a file of FS implements vfs.DeadlineReaderAt, and the wrapped
// AsyncReader honors vfs.ReadRequest.Deadline, as a device with a timeout
// would: a read whose simulated completion falls after its deadline waits
// only until the deadline and returns an error wrapping
// vfs.ErrDeadlineExceeded, without its bytes. That is the one exception to
// what follows.
//
// The package never changes what a read returns (bytes, count, error), and
// never delays metadata operations or syncs. Its IO all goes through the FS
// it wraps.
package latencyfs
