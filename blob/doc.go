// Package blob owns blob files, where key-value separation keeps large
// values out of tables: the file format, the Writer that flushes and
// compactions write values with, the Reader that resolves a blob index to
// its value (one Get, a batch of them through the async reader for
// MultiGet, values asked for in file order with readahead through a
// ValueReader for iterators, or every record in file order for blob garbage
// collection), and
// the encoding of the blob index a table stores under base.KindBlobIndex in
// place of the value.
//
// It stands on the block layer (internal/block): every value is stored as
// a block with the block layer's trailer, so checksums, compression,
// direct-IO and batched reads, readahead, the block cache and the read
// counters are the ones tables use. It never imports sstable, never decides
// which values go to blob files or which blob files are live, never names,
// opens or deletes files (callers hand it a vfs.File), and never consults
// the MANIFEST.
//
// # File
//
// All integers are little-endian. A blob file is a header, records, and a
// footer written when the file is finished:
//
//	+--------+----------+----------+-----+----------+--------+
//	| header | record 0 | record 1 | ... | record n | footer |
//	+--------+----------+----------+-----+----------+--------+
//	0        20                                     size-36  size
//
// Header, 20 bytes:
//
//	+------------+-------------+----------+-------------+-------+----------+----------+
//	| magic      | version     | checksum | compression | flags | reserved | checksum |
//	| 8 bytes    | uint32 (1)  | 1 byte   | 1 byte      | 1     | 1 (0)    | uint32   |
//	+------------+-------------+----------+-------------+-------+----------+----------+
//	0            8             12         13            14      15         16        20
//
// magic is 0xb10bf11e5ba1e001. checksum is the checksum type of every
// checksum in the file, by the block layer's codes: 1 CRC32C (masked), 3
// xxhash64 (low 32 bits). compression is the block trailer code of the
// compression the writer was asked for (0 none, 1 snappy, 7 zstd); each
// record says its own, since a value that does not shrink by 1/8 is stored
// uncompressed. flags is 0 in version 1 (bit 0 is kept for records that
// carry an expiration). The last 4 bytes are the checksum (block.Checksum)
// of the 16 before them. There is no column family id: one DB, one key
// space.
//
// Record, at offset o:
//
//	+----------+--------------------------------------------+----------------------+
//	| length L | block bytes (L bytes, stored)              | block trailer        |
//	| uint32   | contents: uvarint(len(key)) key value,     | type (1) checksum (4)|
//	|          | compressed as the trailer's type says      |                      |
//	+----------+--------------------------------------------+----------------------+
//	o          o+4                                          o+4+L                  o+4+L+5
//	           ^ blob index offset, L = blob index size
//
// The record body is a block of the block layer: its trailer holds the
// compression type of the stored bytes and the checksum of those bytes and
// the type byte. The contents hold the user key before the value, so that
// a reader verifies the index led to the record of the key it asked for,
// and garbage collection learns each record's key. The length in front
// lets a sequential reader find the next record; a read through an index
// checks it equals the index's size.
//
// Footer, 36 bytes, written by Writer.Close and only then:
//
//	+------------+-------------+---------------+-----------------+------------+
//	| blob count | value bytes | file checksum | footer checksum | magic      |
//	| uint64     | uint64      | uint64        | uint32          | 8 bytes    |
//	+------------+-------------+---------------+-----------------+------------+
//	size-36      size-28       size-20         size-12           size-8       size
//
// blob count is the number of records, value bytes the sum of their
// uncompressed value lengths. file checksum is the checksum of every byte
// before the footer, of the file's checksum type but unreduced: the
// unmasked CRC-32C, or the whole xxhash64; it is what a MANIFEST may record
// as the file's checksum. footer checksum is block.Checksum of the 24 bytes
// before it. magic is 0xb10bf11e0f007e7d. A file whose last 8 bytes are not
// that magic (or that is too short to hold header and footer) has no
// footer: it was never finished (its writer crashed or failed), and
// NewReader refuses it with an error matching both ErrNoFooter and
// base.ErrCorruption. Any other damage the Reader finds is a
// base.CorruptionError naming the file and offset; nothing read from a file
// makes the package panic.
//
// # Blob index
//
// What a table stores in place of a value (EncodeIndex, DecodeIndex):
//
//	+----------+--------------------+------------------+----------------+-------------+
//	| kind (1) | file number uvarint| offset uvarint   | size uvarint   | compression |
//	+----------+--------------------+------------------+----------------+-------------+
//
// kind is 1 (a value in a blob file, RocksDB's kBlob). RocksDB's 0 (an
// inlined value with a TTL) and 2 (a blob with a TTL) are reserved and
// refused, as is every other kind, until a format version adds them.
// offset is that of the record's block bytes (o+4 above), size their
// stored length L, and compression the record's trailer code. The varints
// are minimal, no bytes follow, size is at most block.MaxLen and offset +
// size does not overflow: anything else is corruption.
//
// # Caching
//
// With a block cache, a value read through an index is cached under the
// Reader's cache id and the index offset, as the decoded contents (key and
// value) with the record's length and trailer type beside them, so that a
// hit checks the key and the index as a read from the file does. Sequential reads (Iterator)
// neither consult nor fill the cache: garbage collection reads each value
// once.
package blob
