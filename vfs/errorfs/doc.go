// Package errorfs holds the file systems that inject failures into tests,
// each a wrapper over a vfs.FS:
//
//   - FS (New) fails chosen operations (by kind, path substring or
//     base-name glob, count or seeded probability; hard links through
//     vfs.Linker too), with ENOSPC and torn writes. Its files offer no way
//     to reach the files they wrap, so an AsyncReader reads them through
//     their ReadAt, and asynchronous reads see the injected read faults as
//     ReadAt does.
//   - CrashPointFS (NewCrashPointFS) numbers every mutation (create, write,
//     sync, directory sync, rename, remove, truncate, lock, mkdir, link) and
//     calls a hook after each one, with mutations serialized, so a test can
//     take a vfs.MemFS.CrashClone after exactly mutation N and name it in a
//     failure ("op 1234: rename /db/000012.dbtmp -> /db/CURRENT"). Under
//     MemFS's crash model only a sync (or MkdirAll) changes what a crash
//     leaves (Mutation.Durable), so a test needs to reopen one clone per
//     durable mutation to cover a crash after every mutation.
//
// Both do all their IO through the FS they wrap and pass on every call they
// do not fail or count. They never interpret file contents, never delay an
// operation (package latencyfs does that), and are for tests: no production
// code imports this package.
package errorfs
