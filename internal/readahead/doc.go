// Package readahead owns the per-iterator, per-file prefetch state of
// shale's read path: shale's own readahead, which replaces the kernel's when
// tables are read with direct IO (and which we use for buffered files too,
// since table files are opened with a random-access hint).
//
// A State sits between a table iterator and its file. The iterator asks it
// for each data block it must read from the file (blocks found in the block
// cache are only reported with NoteCached: they never cause IO and never
// count as sequential reads). The State either serves the block from its
// window — a buffer holding a contiguous range of the file — or says it did
// not, and the iterator reads the block by itself.
//
// Two modes:
//
//   - Automatic (Config.MaxAuto > 0): a read is sequential when it starts
//     where the previous one ended or inside the current window. The third
//     read of a sequential run (counting its first) fills a window of the
//     block plus 8 KiB after it; each later refill doubles the readahead,
//     up to MaxAuto. With Config.Async the second read already does. A
//     read that is not sequential resets the run.
//   - Explicit (Config.Size > 0): every read that misses the window fills
//     one of the block plus Size bytes, from the first read on.
//
// A window never extends past Config.Limit (the end of the data blocks, or
// of the last block the iterator's upper bound needs), except that with
// direct IO its ends are rounded out to the file's alignment: the window
// starts at the block's offset rounded down and ends at the limit rounded
// up at most. A refill keeps the part of the old window that the new one
// overlaps (the tail holding the start of a block that straddled its end)
// and reads only the rest, so no byte is read twice by one run.
//
// With direct IO (Config.Alignment > 1) the window lives in an aligned
// buffer, and when a Config.Reader is given a window of at least 512 KiB is
// read as up to four concurrent aligned requests of at least 256 KiB
// (MinPartSize), submitted as one batch, so the device works on them
// together. Read then waits only for the parts holding the block it serves:
// the later parts arrive while the caller decodes the first. Smaller
// windows are one request: on the disk we measured, splitting them cost
// more (a hand-off to the async reader) than the parallelism gained.
//
// Counters: BytesIssued counts the bytes the window reads returned,
// BytesUsed the bytes of blocks served from windows (each byte of a window
// counted once), so BytesIssued - BytesUsed is wasted readahead.
//
// Async double buffer (Config.Async, with a Config.Reader): a State has a
// second buffer. Whenever the current window is filled, the window right
// after it (within the limit) is submitted to the async reader before the
// current window's own read, and is read while the caller consumes the
// current one. A read that moves into it (or whose block straddles the two
// windows) waits only for the prefetched bytes it needs, the buffers swap,
// and the prefetch of the following window is submitted. A prefetch reads
// the explicit Size, or in automatic mode the next window of the ramp
// (8 KiB doubling to MaxAuto; the run's second read already starts it);
// SplitWindow halves that, as RocksDB splits one window between the two
// buffers. The prefetch buffer keeps room
// in front of its bytes, into which the current window's tail is copied
// when a block straddles the two, so a swap never copies the window. A
// prefetch that fails or comes back short serves nothing: the caller reads
// the block itself. A window's memory is reused or pooled only after the
// reads into it completed (drain; Init and Release wait).
//
// The package never decodes blocks, never consults the block cache and is
// not safe for concurrent use: each iterator owns its States.
package readahead
