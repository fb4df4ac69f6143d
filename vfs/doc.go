// Package vfs owns the file-system interface every shale file goes through
// (FS, File) and its implementations: the OS file system (POSIX and Windows
// behind build tags), and an in-memory file system that keeps synced and
// unsynced state apart so tests can simulate a crash.
//
// No other shale package touches the os package's files; that is what makes
// crash simulation and fault injection possible. vfs never interprets file
// contents.
package vfs
