// Package vfs owns the file-system interface every shale package does its IO
// through (FS, File) and its implementations:
//
//   - Default, the operating system's file system. POSIX code lives in files
//     built for !windows, Linux-only code (fallocate) in _linux.go files, and
//     Windows code in _windows.go files. On Windows every file is opened with
//     FILE_SHARE_READ|FILE_SHARE_WRITE|FILE_SHARE_DELETE, so that, as on POSIX,
//     a file may be renamed or deleted while another handle reads it; OpenDir
//     returns a handle whose Sync is a no-op there (NTFS has no directory
//     fsync), and Preallocate is a no-op outside Linux and Windows.
//   - MemFS (NewMem), an in-memory file system that keeps synced and unsynced
//     state apart, so a test can take a CrashClone and reopen from what a
//     power loss would have left.
//   - FaultFS (NewFaultFS), a wrapper that fails chosen operations (by kind,
//     path, count or seeded probability), with ENOSPC and torn writes.
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
// and returns io.EOF with a short read.
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
// possible. The asynchronous read interface and the latency-injecting file
// system are not built yet.
package vfs
