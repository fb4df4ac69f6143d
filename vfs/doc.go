// Package vfs owns the file-system interface every shale package does its IO
// through (FS, File) and its implementations:
//
//   - Default, the operating system's file system. POSIX code lives in files
//     built for !windows, Linux-only code (fallocate) in _linux.go files, and
//     Windows code in _windows.go files. On Windows every file is opened with
//     FILE_SHARE_READ|FILE_SHARE_WRITE|FILE_SHARE_DELETE, so that, as on POSIX,
//     a file may be renamed or deleted while another handle reads it; OpenDir
//     returns a handle whose Sync is a no-op there (NTFS has no directory
//     fsync), and Preallocate is a no-op outside Linux, macOS and Windows.
//   - MemFS (NewMem), an in-memory file system that keeps synced and unsynced
//     state apart, so a test can take a CrashClone and reopen from what a
//     power loss would have left.
//
// The file systems that wrap another to change what it does live in their
// own packages: vfs/errorfs (failing chosen operations, and numbering the
// mutations a test can crash after) and vfs/latencyfs (a simulated slow
// device). vfs knows nothing of them. Two small interfaces let such a
// wrapper keep what its files pass on: a wrapping file forwards Alignment
// (Aligner), and a wrapping FS that has something to do around each read
// of its files may give the owner of an AsyncReader one that reads the
// wrapped files natively (AsyncReaderWrapper). Hard links are a third such
// interface, Linker: Default links with os.Link (link(2), CreateHardLink on
// Windows), MemFS by giving one node two names, and wrappers forward it;
// LinkOrCopy links, or copies where the names cannot share a file (another
// device, no hard links) or the FS is no Linker.
//
// Lock takes an exclusive, non-blocking lock: flock(LOCK_EX|LOCK_NB) on POSIX,
// LockFileEx on Windows, and in addition a process-wide registry of locked
// paths, so a second Lock of the same path in one process fails on every
// platform with an error wrapping ErrLocked.
//
// On Windows a File is a handle read and written only at explicit offsets
// (ReadFile/WriteFile with an OVERLAPPED offset, the append position kept by
// the File), so ReadAt never moves a shared file pointer. Sync and SyncData
// are FlushFileBuffers; Truncate and Preallocate are SetFileInformationByHandle
// with end-of-file and allocation info (preallocation the system cannot do is
// ignored). Remove deletes with POSIX semantics, and where the system cannot
// (Wine, FAT) first renames the file to a hidden ".shale-deleted-" name that
// List leaves out, so a removed name is free at once while open handles keep
// reading; Rename is MoveFileEx(REPLACE_EXISTING|WRITE_THROUGH), and replaces
// a target another handle holds open. DirectIO is FILE_FLAG_NO_BUFFERING with
// the volume's logical sector size as alignment, enforced by vfs itself (Wine
// does not): unaligned reads bounce through pooled aligned buffers, and
// writes go out in whole sectors, the padded last one cut back by setting the
// end of file and kept in memory for the next Write. docs/windows.md has the
// full mapping and how the tests run under Wine.
//
// Write semantics are those of os.File on every implementation: Write writes
// at the handle's position, which starts at 0 after Create and at the end of
// the file after OpenReadWrite, and which Truncate does not move. ReadAt is
// positional, safe for concurrent use (also while another handle appends),
// and returns io.EOF with a short read (an empty read returns 0 and no
// error at any offset, as os.File's does).
//
// Direct IO (the DirectIO open option) bypasses the page cache: O_DIRECT on
// Linux, F_NOCACHE on macOS; other POSIX systems refuse it with
// ErrDirectIOUnsupported, as does Linux when open(O_DIRECT) fails with EINVAL
// (the error names the path). Alignment(f) reports the block size such a
// file needs: statx's STATX_DIOALIGN (the larger of dio_mem_align and
// dio_offset_align) on Linux 6.1+, f_bsize on macOS, else 4096. A direct
// file's ReadAt takes any request: aligned ones (offset, length and buffer
// address, see IsAligned and AlignedBuffer) go to the file as they are,
// others read the covering aligned range into a pooled bounce buffer. Its
// Write gathers appends in an aligned 256 KiB buffer written in whole
// blocks; Sync, SyncData and Close write the partial last block padded with
// zeros and cut the file back to its true size, keeping that block in memory
// so the next flush rewrites it. Size and ReadAt always see the true size and
// bytes. MemFS accepts DirectIO and reports an alignment of 512, so aligned
// code paths run in memory tests. RandomAccess and SequentialAccess become
// posix_fadvise hints on Linux; Preallocate is fallocate(KEEP_SIZE) on Linux
// and F_PREALLOCATE on macOS; SyncData is fdatasync on Linux, which also
// makes a grown size durable, so it suffices for append-only files.
//
// MemFS crash model (a strict POSIX file system):
//
//   - a file's data becomes durable at File.Sync; bytes written after the
//     last Sync are lost in a crash;
//   - a directory's entries become durable when the directory is synced
//     through OpenDir(dir).Sync(); until then Create, Rename and Remove change
//     only the current entries, and a crash reverts them;
//   - directories made by MkdirAll are durable at once (a simplification:
//     crash tests are about the files of a database, not its directory).
//
// vfs never interprets file contents, and no other shale package touches the
// os package's files; that is what makes crash simulation and fault injection
// possible.
//
// Asynchronous reads: NewAsyncReader returns an AsyncReader that takes
// batches of (file, offset, buffer) requests from any number of goroutines.
// On Linux it is one io_uring (io_uring_setup over raw system calls, rings
// mapped, IORING_OP_READ probed): each Submit sends its batch with one
// io_uring_enter (more only when the batch exceeds the free ring slots), a
// reaper goroutine sleeps in io_uring_enter until completions arrive (no
// polling thread, unless AsyncOptions.SQPoll), at most QueueDepth reads are
// in flight so the completion ring never overflows, and short reads continue
// until ReadAt's result is reached: every request ends with the N and error
// File.ReadAt would return. Requests the ring cannot serve (files that are
// not this package's OS files, such as MemFS files and those of wrapping
// file systems, closed files, direct-IO reads that are not aligned) are
// read with ReadAt on goroutines within the same batch, so callers never
// branch. Where io_uring is missing or refused (old kernel, seccomp,
// kernel.io_uring_disabled) or AsyncOptions.DisableIOUring is set, and on
// other platforms, the portable reader issues concurrent ReadAts on at most
// QueueDepth goroutines. Reads beyond QueueDepth wait on one goroutine of
// the batch, not in Submit. ReadBatch.Release optionally recycles a finished
// batch, which makes a Submit/Wait/Release cycle on io_uring allocation-free.
// An AsyncReader made outside this package (the one an AsyncReaderWrapper
// returns) makes its batches with NewReadBatch and completes their requests
// with ReadBatch.Complete.
//
// Read deadlines (deadline.go): a ReadRequest with a Deadline completes by
// then with an error wrapping ErrDeadlineExceeded (os.ErrDeadlineExceeded).
// The ring links an IORING_OP_LINK_TIMEOUT to each such read, which cancels
// it in the kernel, and hands the request back only once the CQEs of both
// are reaped. Everything else goes through ReadAtDeadline: no IO once the
// deadline has passed; a file implementing DeadlineReaderAt (the latency
// FS) stops at the deadline; any other ReadAt, an OS pread among them, is
// not interrupted once started and reports the timeout if it returns late.
package vfs
