// Command libshale is shale's C API: built with -buildmode=c-shared (or
// c-archive) it is a library whose functions, declared in shale.h, follow
// RocksDB's C API (rocksdb/c.h) with the prefix shale_ instead of rocksdb_.
//
//	go build -buildmode=c-shared -o libshale.so ./cmd/libshale
//
// Handles given to C are small malloc'd structs holding a runtime/cgo.Handle,
// so no Go pointer ever crosses into C; everything the library returns to C
// (values, keys' copies, error strings) is C memory. docs/c-api.md lists the
// functions and who frees what. Without cgo (GOOS=windows cross-builds, or no
// C compiler) the package builds as an empty program.
package main

// main is never run: a c-shared or c-archive build needs a main package.
func main() {}
