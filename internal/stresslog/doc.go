// Package stresslog owns the expected-state log of the process-crash test
// (`shale stress`): the record a writer keeps of the batches it is about to
// commit and of those the DB acknowledged, so that whoever kills the writer
// can tell, afterwards, what the database must hold.
//
// One log file belongs to one writer goroutine of one child process. The
// writer appends a Pending record (the batch's operations) before it calls
// DB.Write, and an Acked record after DB.Write returned nil. Each record is
// one write system call on an unbuffered file, so a SIGKILL leaves every
// completed record in the OS; only the last one can be torn, and its
// checksum says so. After a kill, Read returns the batches in order: every
// Acked one, and at most one, the last, that was pending without an ack
// (in flight: it may or may not be in the database, but all of it or none).
//
// It never opens a database, never decides what a batch means for the
// database (the verifier in cmd/shale does), and never syncs: the log has to
// survive a process crash, not a power loss.
//
// On-disk layout (integers little-endian, uvarint as encoding/binary):
//
//	file    := header record*
//	header  := magic "shSTRESS" (8 bytes) | version (1 byte, = 1)
//	record  := crc (4 bytes: CRC32C of length and payload)
//	           | length (3 bytes: payload bytes, 1..MaxPayload)
//	           | check (1 byte: XOR of the length bytes and 0xa5)
//	           | payload
//	payload := 'P' seq ops        (pending)
//	         | 'A' seq            (acked)
//	ops     := count uvarint | op*
//	op      := kind (1 byte) | key uvarint | arg uvarint
//
// seq is the batch's number within the log, starting at 1 and increasing
// by one per Pending record; an Acked record names the seq of the Pending
// record just before it. kind is OpPut (arg: value length), OpDelete (arg:
// 0) or OpDeleteRange (key and arg: the first key and the key after the
// last one deleted). Keys are indexes into the caller's key space.
package stresslog
