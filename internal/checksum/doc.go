// Package checksum is the one place shale computes checksums: CRC-32C
// (Castagnoli, with the hardware instruction where the CPU has one),
// LevelDB's masking of a CRC that is stored inside checksummed data, and
// xxhash64. Tables, the record format of the WAL and MANIFEST, the OPTIONS
// file and the stress log all checksum through it, so that a format names a
// checksum and never builds its own table.
//
// It owns no format: which bytes a checksum covers, where it is stored and
// whether it is masked is the business of each format (internal/block draws
// the block trailer, internal/record the fragment header). It does no IO and
// imports no shale package.
//
// # Masking
//
//	masked = rotate_right(crc, 15) + 0xa282ead8   (mod 2^32)
//
// A CRC computed over bytes that themselves contain CRCs is poorly
// distributed; LevelDB and RocksDB store CRC-32C values masked, and so do
// shale's blocks and records. Unmask inverts it.
package checksum
