package manifest

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// Top-level tags of an encoded VersionEdit. The values of the fields shared
// with RocksDB match its VersionEdit tags.
const (
	tagComparer       = 1
	tagLogNumber      = 2
	tagNextFileNumber = 3
	tagLastSeq        = 4
	tagDeletedFile    = 6
	tagManifestFormat = 20
	tagNewFile        = 103

	// tagSecondaryTombstone adds a live secondary tombstone (lo | hi |
	// seqnum) and tagRetireSecondary removes one (seqnum). Neither carries
	// tagSafeToIgnore: a reader that skipped them would show deleted data
	// again, so an older shale refuses such a MANIFEST ("unknown tag").
	tagSecondaryTombstone = 140
	tagRetireSecondary    = 141

	// tagMergeOperator names the merge operator the database's merge
	// operands were written under (a string). It lacks tagSafeToIgnore: a
	// reader that does not resolve merges would return operands as values,
	// so an older shale refuses such a MANIFEST ("unknown tag").
	tagMergeOperator = 150

	// Blob files: tagBlobFileAddition adds one (number | total blobs | total
	// bytes | file size | checksum method | checksum value | custom fields),
	// tagBlobFileGarbage adds garbage to one (number | blobs | bytes |
	// custom fields), tagDeletedBlobFile removes one (number). The values of
	// the first two are RocksDB's. None carries tagSafeToIgnore: a reader
	// that skipped them would find tables referencing unknown blob files, or
	// would remove blob files still in use, so an older shale refuses a
	// MANIFEST holding them ("unknown tag").
	tagBlobFileAddition = 400
	tagBlobFileGarbage  = 401
	tagDeletedBlobFile  = 402

	// tagSafeToIgnore marks a top-level tag that a reader which does not know
	// it may skip; its payload is then a length-prefixed byte string.
	tagSafeToIgnore = 1 << 13
)

// Custom-field tags inside a new-file record.
const (
	customTerminate           = 1
	customNumEntries          = 2
	customNumDeletions        = 3
	customNumRangeDeletions   = 4
	customOldestTombstoneTime = 5
	customMarkedForCompaction = 6

	// customBlobFiles lists the blob files a table references: the
	// smallest number, then the uvarint difference to each next one (at
	// least 1), all in one field. It lacks customSafeToIgnore: a reader
	// that dropped it would take the blob files for unreferenced.
	customBlobFiles = 7
	// customGlobalSeqNum is the seqnum every entry of an ingested table
	// reads at (FileMetadata.GlobalSeqNum). It lacks customSafeToIgnore: a
	// reader that skipped it would read the table's entries at seqnum 0,
	// below data they overwrite, so an older shale refuses the MANIFEST.
	customGlobalSeqNum = 30

	// customSafeToIgnore marks a custom field that a reader which does not
	// know it may skip; an unknown field without it is corruption.
	customSafeToIgnore = 1 << 6

	// Fields that only guide compaction picking: a reader that does not
	// know them loses nothing it needs to read the database, so they carry
	// customSafeToIgnore and MANIFESTs holding them still open with older
	// readers.
	customRawKeySize                  = customSafeToIgnore | 7
	customRawValueSize                = customSafeToIgnore | 8
	customNumDataBlocks               = customSafeToIgnore | 9
	customNumTombstoneDenseBlocks     = customSafeToIgnore | 10
	customRangeDeletionsBytesEstimate = customSafeToIgnore | 11

	// customOldestTombstoneNanos is the oldest tombstone time to the
	// nanosecond. Delete persistence deadlines can be shorter than a
	// second, so the seconds of customOldestTombstoneTime are too coarse;
	// both are written, and a reader that does not know this field keeps
	// the seconds.
	customOldestTombstoneNanos = customSafeToIgnore | 20

	// The secondary attribute range and the applied secondary tombstone
	// seqnum of a table only decide when a secondary tombstone is retired
	// and which files compaction picks for it; a reader that does not know
	// them also does not know secondary tombstones (tagSecondaryTombstone
	// stops it), so they may be skipped.
	customSecondaryMin     = customSafeToIgnore | 21
	customSecondaryMax     = customSafeToIgnore | 22
	customSecondaryCount   = customSafeToIgnore | 23
	customSecondaryApplied = customSafeToIgnore | 24

	// The data and file ages of a table only decide TTL and periodic
	// compactions: a reader that skips them loses nothing.
	customOldestAncesterTime = customSafeToIgnore | 25
	customFileCreationTime   = customSafeToIgnore | 26

	// The whole-file checksum of a table (RocksDB's file_checksum and
	// file_checksum_func_name): the value's raw bytes, and the name of the
	// generator that made it. Written together or not at all. A reader
	// that skips them only cannot verify the file whole; its blocks keep
	// their own checksums.
	customFileChecksum         = customSafeToIgnore | 32
	customFileChecksumFuncName = customSafeToIgnore | 33
)

// Custom-field tags inside a blob file record (400, 401): a namespace of
// their own, with the rules of a new-file record's.
const (
	// customBlobGarbageTime dates the garbage of a 401 record (unix
	// nanoseconds). It only times delete persistence's rewrites of blob
	// files: a reader that skips it loses no data, so it may be ignored.
	customBlobGarbageTime = customSafeToIgnore | 1
)

// ManifestFormatV1 is the MANIFEST format version this package writes and
// the newest it reads.
const ManifestFormatV1 = 1

// Encode appends the encoding of e to dst and returns the result. Deleted
// files are written in (level, file number) order, so equal edits encode to
// equal bytes.
func (e *VersionEdit) Encode(dst []byte) []byte {
	if e.ManifestFormat != 0 {
		dst = binary.AppendUvarint(dst, tagManifestFormat)
		dst = binary.AppendUvarint(dst, e.ManifestFormat)
	}
	if e.ComparerName != "" {
		dst = binary.AppendUvarint(dst, tagComparer)
		dst = binary.AppendUvarint(dst, uint64(len(e.ComparerName)))
		dst = append(dst, e.ComparerName...)
	}
	if e.MergeOperatorName != "" {
		dst = binary.AppendUvarint(dst, tagMergeOperator)
		dst = binary.AppendUvarint(dst, uint64(len(e.MergeOperatorName)))
		dst = append(dst, e.MergeOperatorName...)
	}
	if e.HasLogNumber {
		dst = binary.AppendUvarint(dst, tagLogNumber)
		dst = binary.AppendUvarint(dst, uint64(e.LogNumber))
	}
	if e.HasNextFileNumber {
		dst = binary.AppendUvarint(dst, tagNextFileNumber)
		dst = binary.AppendUvarint(dst, uint64(e.NextFileNumber))
	}
	if e.HasLastSeq {
		dst = binary.AppendUvarint(dst, tagLastSeq)
		dst = binary.AppendUvarint(dst, uint64(e.LastSeq))
	}
	for _, d := range e.sortedDeletedFiles() {
		dst = binary.AppendUvarint(dst, tagDeletedFile)
		dst = binary.AppendUvarint(dst, uint64(d.Level))
		dst = binary.AppendUvarint(dst, uint64(d.FileNum))
	}
	for _, nf := range e.NewFiles {
		m := nf.Meta
		dst = binary.AppendUvarint(dst, tagNewFile)
		dst = binary.AppendUvarint(dst, uint64(nf.Level))
		dst = binary.AppendUvarint(dst, uint64(m.FileNum))
		dst = binary.AppendUvarint(dst, m.Size)
		dst = binary.AppendUvarint(dst, uint64(m.Smallest.Size()))
		dst = m.Smallest.AppendEncoded(dst)
		dst = binary.AppendUvarint(dst, uint64(m.Largest.Size()))
		dst = m.Largest.AppendEncoded(dst)
		dst = binary.AppendUvarint(dst, uint64(m.SmallestSeq))
		dst = binary.AppendUvarint(dst, uint64(m.LargestSeq))
		dst = appendCustomUvarint(dst, customNumEntries, m.NumEntries)
		dst = appendCustomUvarint(dst, customNumDeletions, m.NumDeletions)
		dst = appendCustomUvarint(dst, customNumRangeDeletions, m.NumRangeDeletions)
		dst = appendCustomUvarint(dst, customOldestTombstoneTime, m.OldestTombstoneTime/uint64(time.Second))
		dst = appendCustomUvarint(dst, customOldestTombstoneNanos, m.OldestTombstoneTime)
		if m.MarkedForCompaction {
			dst = append(dst, customMarkedForCompaction, 1, 1)
		}
		dst = appendCustomUvarint(dst, customRawKeySize, m.RawKeySize)
		dst = appendCustomUvarint(dst, customRawValueSize, m.RawValueSize)
		dst = appendCustomUvarint(dst, customNumDataBlocks, m.NumDataBlocks)
		dst = appendCustomUvarint(dst, customNumTombstoneDenseBlocks, m.NumTombstoneDenseBlocks)
		dst = appendCustomUvarint(dst, customRangeDeletionsBytesEstimate, m.RangeDeletionsBytesEstimate)
		if m.Secondary.Known {
			// The count is written even when zero: its presence says the
			// range is known.
			dst = binary.AppendUvarint(dst, customSecondaryCount)
			dst = binary.AppendUvarint(dst, uint64(uvarintLen(m.Secondary.Count)))
			dst = binary.AppendUvarint(dst, m.Secondary.Count)
			dst = appendCustomUvarint(dst, customSecondaryMin, m.Secondary.Min)
			dst = appendCustomUvarint(dst, customSecondaryMax, m.Secondary.Max)
		}
		dst = appendCustomUvarint(dst, customSecondaryApplied, uint64(m.SecondaryApplied))
		dst = appendCustomUvarint(dst, customOldestAncesterTime, m.OldestAncesterTime)
		dst = appendCustomUvarint(dst, customFileCreationTime, m.FileCreationTime)
		dst = appendCustomUvarint(dst, customGlobalSeqNum, uint64(m.GlobalSeqNum))
		if m.FileChecksumFuncName != "" {
			dst = binary.AppendUvarint(dst, customFileChecksum)
			dst = binary.AppendUvarint(dst, uint64(len(m.FileChecksum)))
			dst = append(dst, m.FileChecksum...)
			dst = binary.AppendUvarint(dst, customFileChecksumFuncName)
			dst = binary.AppendUvarint(dst, uint64(len(m.FileChecksumFuncName)))
			dst = append(dst, m.FileChecksumFuncName...)
		}
		if len(m.BlobFiles) > 0 {
			var refs []byte
			prev := base.FileNum(0)
			for _, n := range m.BlobFiles {
				refs = binary.AppendUvarint(refs, uint64(n-prev))
				prev = n
			}
			dst = binary.AppendUvarint(dst, customBlobFiles)
			dst = binary.AppendUvarint(dst, uint64(len(refs)))
			dst = append(dst, refs...)
		}
		dst = binary.AppendUvarint(dst, customTerminate)
	}
	for _, seq := range e.RetiredSecondaryTombstones {
		dst = binary.AppendUvarint(dst, tagRetireSecondary)
		dst = binary.AppendUvarint(dst, uint64(seq))
	}
	for _, t := range e.AddedSecondaryTombstones {
		dst = binary.AppendUvarint(dst, tagSecondaryTombstone)
		dst = binary.AppendUvarint(dst, t.Lo)
		dst = binary.AppendUvarint(dst, t.Hi)
		dst = binary.AppendUvarint(dst, uint64(t.Seq))
	}
	for _, b := range e.NewBlobFiles {
		dst = binary.AppendUvarint(dst, tagBlobFileAddition)
		dst = binary.AppendUvarint(dst, uint64(b.FileNum))
		dst = binary.AppendUvarint(dst, b.TotalCount)
		dst = binary.AppendUvarint(dst, b.TotalBytes)
		dst = binary.AppendUvarint(dst, b.Size)
		dst = binary.AppendUvarint(dst, uint64(len(b.ChecksumMethod)))
		dst = append(dst, b.ChecksumMethod...)
		dst = binary.AppendUvarint(dst, uint64(len(b.ChecksumValue)))
		dst = append(dst, b.ChecksumValue...)
		dst = binary.AppendUvarint(dst, customTerminate)
	}
	for _, g := range e.BlobGarbage {
		dst = binary.AppendUvarint(dst, tagBlobFileGarbage)
		dst = binary.AppendUvarint(dst, uint64(g.FileNum))
		dst = binary.AppendUvarint(dst, g.Count)
		dst = binary.AppendUvarint(dst, g.Bytes)
		dst = appendCustomUvarint(dst, customBlobGarbageTime, g.Time)
		dst = binary.AppendUvarint(dst, customTerminate)
	}
	for _, n := range e.DeletedBlobFiles {
		dst = binary.AppendUvarint(dst, tagDeletedBlobFile)
		dst = binary.AppendUvarint(dst, uint64(n))
	}
	return dst
}

// appendCustomUvarint appends a custom field holding v, or nothing when v is
// zero (absent fields decode as zero).
func appendCustomUvarint(dst []byte, tag uint64, v uint64) []byte {
	if v == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(uvarintLen(v)))
	return binary.AppendUvarint(dst, v)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func (e *VersionEdit) sortedDeletedFiles() []DeletedFileEntry {
	if len(e.DeletedFiles) == 0 {
		return nil
	}
	ds := make([]DeletedFileEntry, 0, len(e.DeletedFiles))
	for d := range e.DeletedFiles {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b DeletedFileEntry) int {
		if c := cmp.Compare(a.Level, b.Level); c != 0 {
			return c
		}
		return cmp.Compare(a.FileNum, b.FileNum)
	})
	return ds
}

// editDecoder reads the fields of one encoded edit. Errors name the record's
// file and offset, and give the position inside the record in the message.
type editDecoder struct {
	data   []byte
	pos    int
	file   string
	offset int64
}

func (d *editDecoder) errorf(format string, args ...any) error {
	return base.CorruptionErrorf(d.file, d.offset, "manifest: version edit byte %d: "+format,
		append([]any{d.pos}, args...)...)
}

func (d *editDecoder) uvarint(what string) (uint64, error) {
	v, n := binary.Uvarint(d.data[d.pos:])
	if n <= 0 {
		return 0, d.errorf("bad varint for %s", what)
	}
	d.pos += n
	return v, nil
}

// bytes returns a length-prefixed byte string, aliasing the input.
func (d *editDecoder) bytes(what string) ([]byte, error) {
	n, err := d.uvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.data)-d.pos) {
		return nil, d.errorf("%s length %d exceeds the %d remaining bytes", what, n, len(d.data)-d.pos)
	}
	b := d.data[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return b, nil
}

func (d *editDecoder) level() (int, error) {
	l, err := d.uvarint("level")
	if err != nil {
		return 0, err
	}
	if l >= NumLevelsMax {
		return 0, d.errorf("level %d out of range (max %d)", l, NumLevelsMax-1)
	}
	return int(l), nil
}

func (d *editDecoder) seqNum(what string) (base.SeqNum, error) {
	s, err := d.uvarint(what)
	if err != nil {
		return 0, err
	}
	if base.SeqNum(s) > base.SeqNumMax {
		return 0, d.errorf("%s %d exceeds the 56-bit maximum", what, s)
	}
	return base.SeqNum(s), nil
}

// Decode replaces e with the edit encoded in data. fileName and offset (of
// the record holding data) name the place in errors: anything malformed
// returns a *base.CorruptionError. e does not alias data.
func (e *VersionEdit) Decode(data []byte, fileName string, offset int64) error {
	*e = VersionEdit{}
	d := editDecoder{data: data, file: fileName, offset: offset}
	for d.pos < len(d.data) {
		tag, err := d.uvarint("tag")
		if err != nil {
			return err
		}
		switch tag {
		case tagManifestFormat:
			v, err := d.uvarint("manifest format")
			if err != nil {
				return err
			}
			if v == 0 {
				return d.errorf("manifest format 0")
			}
			e.ManifestFormat = v
		case tagComparer:
			b, err := d.bytes("comparer name")
			if err != nil {
				return err
			}
			if len(b) == 0 {
				return d.errorf("empty comparer name")
			}
			e.ComparerName = string(b)
		case tagMergeOperator:
			b, err := d.bytes("merge operator name")
			if err != nil {
				return err
			}
			if len(b) == 0 {
				return d.errorf("empty merge operator name")
			}
			e.MergeOperatorName = string(b)
		case tagLogNumber:
			v, err := d.uvarint("log number")
			if err != nil {
				return err
			}
			e.HasLogNumber, e.LogNumber = true, base.FileNum(v)
		case tagNextFileNumber:
			v, err := d.uvarint("next file number")
			if err != nil {
				return err
			}
			e.HasNextFileNumber, e.NextFileNumber = true, base.FileNum(v)
		case tagLastSeq:
			s, err := d.seqNum("last seqnum")
			if err != nil {
				return err
			}
			e.HasLastSeq, e.LastSeq = true, s
		case tagDeletedFile:
			level, err := d.level()
			if err != nil {
				return err
			}
			num, err := d.uvarint("deleted file number")
			if err != nil {
				return err
			}
			if e.DeletedFiles == nil {
				e.DeletedFiles = make(map[DeletedFileEntry]bool)
			}
			e.DeletedFiles[DeletedFileEntry{Level: level, FileNum: base.FileNum(num)}] = true
		case tagNewFile:
			nf, err := d.newFile()
			if err != nil {
				return err
			}
			e.NewFiles = append(e.NewFiles, nf)
		case tagSecondaryTombstone:
			lo, err := d.uvarint("secondary tombstone lo")
			if err != nil {
				return err
			}
			hi, err := d.uvarint("secondary tombstone hi")
			if err != nil {
				return err
			}
			seq, err := d.seqNum("secondary tombstone seqnum")
			if err != nil {
				return err
			}
			if lo >= hi {
				return d.errorf("secondary tombstone [%d,%d)@%d has an empty range", lo, hi, seq)
			}
			e.AddedSecondaryTombstones = append(e.AddedSecondaryTombstones, SecondaryTombstone{Lo: lo, Hi: hi, Seq: seq})
		case tagRetireSecondary:
			seq, err := d.seqNum("retired secondary tombstone seqnum")
			if err != nil {
				return err
			}
			e.RetiredSecondaryTombstones = append(e.RetiredSecondaryTombstones, seq)
		case tagBlobFileAddition:
			b, err := d.blobFileAddition()
			if err != nil {
				return err
			}
			e.NewBlobFiles = append(e.NewBlobFiles, b)
		case tagBlobFileGarbage:
			num, err := d.blobFileNum("garbage blob file number")
			if err != nil {
				return err
			}
			g := BlobGarbage{FileNum: num}
			if g.Count, err = d.uvarint("garbage blob count"); err != nil {
				return err
			}
			if g.Bytes, err = d.uvarint("garbage blob bytes"); err != nil {
				return err
			}
			err = d.blobCustomFields(num, func(tag uint64, field []byte) (bool, error) {
				if tag != customBlobGarbageTime {
					return false, nil
				}
				t, n := binary.Uvarint(field)
				if n <= 0 || n != len(field) {
					return true, d.errorf("blob file %s: bad garbage time", num)
				}
				g.Time = t
				return true, nil
			})
			if err != nil {
				return err
			}
			e.BlobGarbage = append(e.BlobGarbage, g)
		case tagDeletedBlobFile:
			num, err := d.blobFileNum("deleted blob file number")
			if err != nil {
				return err
			}
			e.DeletedBlobFiles = append(e.DeletedBlobFiles, num)
		default:
			if tag&tagSafeToIgnore == 0 {
				return d.errorf("unknown tag %d", tag)
			}
			if _, err := d.bytes("ignorable field"); err != nil {
				return err
			}
		}
	}
	return nil
}

// blobFileNum reads a blob file number; 0 is none (OldestBlobFile's "no
// reference"), so it is corruption.
func (d *editDecoder) blobFileNum(what string) (base.FileNum, error) {
	n, err := d.uvarint(what)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, d.errorf("%s 0", what)
	}
	return base.FileNum(n), nil
}

func (d *editDecoder) blobFileAddition() (*BlobFileMetadata, error) {
	num, err := d.blobFileNum("blob file number")
	if err != nil {
		return nil, err
	}
	b := &BlobFileMetadata{FileNum: num}
	if b.TotalCount, err = d.uvarint("total blob count"); err != nil {
		return nil, err
	}
	if b.TotalBytes, err = d.uvarint("total blob bytes"); err != nil {
		return nil, err
	}
	if b.Size, err = d.uvarint("blob file size"); err != nil {
		return nil, err
	}
	method, err := d.bytes("blob file checksum method")
	if err != nil {
		return nil, err
	}
	value, err := d.bytes("blob file checksum value")
	if err != nil {
		return nil, err
	}
	if len(method) == 0 && len(value) > 0 {
		return nil, d.errorf("blob file %s: checksum value without a method", num)
	}
	b.ChecksumMethod = string(method)
	if len(value) > 0 {
		b.ChecksumValue = append([]byte(nil), value...)
	}
	if err := d.blobCustomFields(num, nil); err != nil {
		return nil, err
	}
	return b, nil
}

// blobCustomFields reads the custom fields that end a blob file record, up
// to the terminator, handing each to known (when not nil), which reports
// whether it knows the tag; unknown ignorable ones are skipped, other
// unknown ones are corruption.
func (d *editDecoder) blobCustomFields(num base.FileNum, known func(tag uint64, field []byte) (bool, error)) error {
	for {
		tag, err := d.uvarint("blob custom field tag")
		if err != nil {
			return err
		}
		if tag == customTerminate {
			return nil
		}
		field, err := d.bytes("blob custom field")
		if err != nil {
			return err
		}
		if known != nil {
			if ok, err := known(tag, field); err != nil {
				return err
			} else if ok {
				continue
			}
		}
		if tag&customSafeToIgnore == 0 {
			return d.errorf("blob file %s: unknown custom field %d", num, tag)
		}
	}
}

// blobRefs decodes the customBlobFiles field: ascending, non-zero numbers,
// at least one.
func (d *editDecoder) blobRefs(table base.FileNum, field []byte) ([]base.FileNum, error) {
	if len(field) == 0 {
		return nil, d.errorf("file %s: empty blob reference list", table)
	}
	var refs []base.FileNum
	var prev uint64
	for len(field) > 0 {
		delta, n := binary.Uvarint(field)
		if n <= 0 {
			return nil, d.errorf("file %s: bad blob reference list", table)
		}
		field = field[n:]
		if delta == 0 || prev+delta < prev {
			return nil, d.errorf("file %s: blob references not ascending", table)
		}
		prev += delta
		refs = append(refs, base.FileNum(prev))
	}
	return refs, nil
}

func (d *editDecoder) newFile() (NewFileEntry, error) {
	level, err := d.level()
	if err != nil {
		return NewFileEntry{}, err
	}
	m := &FileMetadata{}
	num, err := d.uvarint("file number")
	if err != nil {
		return NewFileEntry{}, err
	}
	m.FileNum = base.FileNum(num)
	if m.Size, err = d.uvarint("file size"); err != nil {
		return NewFileEntry{}, err
	}
	smallest, err := d.bytes("smallest key")
	if err != nil {
		return NewFileEntry{}, err
	}
	largest, err := d.bytes("largest key")
	if err != nil {
		return NewFileEntry{}, err
	}
	if len(smallest) < 8 || len(largest) < 8 {
		return NewFileEntry{}, d.errorf("file %s: internal key shorter than its trailer", m.FileNum)
	}
	// One allocation holds both keys, so the metadata does not alias data.
	buf := make([]byte, 0, len(smallest)+len(largest))
	buf = append(append(buf, smallest...), largest...)
	m.Smallest, _ = base.DecodeInternalKey(buf[:len(smallest)])
	m.Largest, _ = base.DecodeInternalKey(buf[len(smallest):])
	if m.SmallestSeq, err = d.seqNum("smallest seqnum"); err != nil {
		return NewFileEntry{}, err
	}
	if m.LargestSeq, err = d.seqNum("largest seqnum"); err != nil {
		return NewFileEntry{}, err
	}
	if m.SmallestSeq > m.LargestSeq {
		return NewFileEntry{}, d.errorf("file %s: smallest seqnum %d > largest seqnum %d",
			m.FileNum, m.SmallestSeq, m.LargestSeq)
	}
	// The seconds of a MANIFEST written before the nanoseconds field
	// existed count when it is absent.
	var tombstoneSecs, tombstoneNanos, secondaryApplied uint64
	var sum []byte
	haveSum := false
	for {
		tag, err := d.uvarint("custom field tag")
		if err != nil {
			return NewFileEntry{}, err
		}
		if tag == customTerminate {
			if secondaryApplied > uint64(base.SeqNumMax) {
				return NewFileEntry{}, d.errorf("file %s: secondary applied seqnum %d exceeds the 56-bit maximum", m.FileNum, secondaryApplied)
			}
			m.SecondaryApplied = base.SeqNum(secondaryApplied)
			if m.GlobalSeqNum > base.SeqNumMax || (m.GlobalSeqNum != 0 && (m.SmallestSeq != m.GlobalSeqNum || m.LargestSeq != m.GlobalSeqNum)) {
				return NewFileEntry{}, d.errorf("file %s: global seqnum %d does not match its seqnums %d..%d", m.FileNum, m.GlobalSeqNum, m.SmallestSeq, m.LargestSeq)
			}
			if !m.Secondary.Known && (m.Secondary.Min != 0 || m.Secondary.Max != 0) {
				// The writer puts the count before the range whenever the
				// range is known: a range without its count is damage.
				return NewFileEntry{}, d.errorf("file %s: secondary attribute range without its count", m.FileNum)
			}
			if m.Secondary.Min > m.Secondary.Max {
				return NewFileEntry{}, d.errorf("file %s: secondary attribute min %d > max %d", m.FileNum, m.Secondary.Min, m.Secondary.Max)
			}
			if haveSum != (m.FileChecksumFuncName != "") {
				return NewFileEntry{}, d.errorf("file %s: file checksum without the name of its function, or a name without a checksum", m.FileNum)
			}
			if haveSum {
				m.FileChecksum = append([]byte{}, sum...)
			}
			m.OldestTombstoneTime = tombstoneNanos
			if tombstoneNanos == 0 {
				m.OldestTombstoneTime = tombstoneSecs * uint64(time.Second)
				if tombstoneSecs > math.MaxUint64/uint64(time.Second) {
					m.OldestTombstoneTime = math.MaxUint64
				}
			}
			return NewFileEntry{Level: level, Meta: m}, nil
		}
		field, err := d.bytes("custom field")
		if err != nil {
			return NewFileEntry{}, err
		}
		var dst *uint64
		switch tag {
		case customNumEntries:
			dst = &m.NumEntries
		case customNumDeletions:
			dst = &m.NumDeletions
		case customNumRangeDeletions:
			dst = &m.NumRangeDeletions
		case customOldestTombstoneTime:
			dst = &tombstoneSecs
		case customOldestTombstoneNanos:
			dst = &tombstoneNanos
		case customRawKeySize:
			dst = &m.RawKeySize
		case customRawValueSize:
			dst = &m.RawValueSize
		case customNumDataBlocks:
			dst = &m.NumDataBlocks
		case customNumTombstoneDenseBlocks:
			dst = &m.NumTombstoneDenseBlocks
		case customRangeDeletionsBytesEstimate:
			dst = &m.RangeDeletionsBytesEstimate
		case customSecondaryMin:
			dst = &m.Secondary.Min
		case customSecondaryMax:
			dst = &m.Secondary.Max
		case customSecondaryCount:
			dst = &m.Secondary.Count
			m.Secondary.Known = true
		case customSecondaryApplied:
			dst = &secondaryApplied
		case customOldestAncesterTime:
			dst = &m.OldestAncesterTime
		case customFileCreationTime:
			dst = &m.FileCreationTime
		case customGlobalSeqNum:
			dst = (*uint64)(&m.GlobalSeqNum)
		case customMarkedForCompaction:
			if len(field) != 1 || field[0] > 1 {
				return NewFileEntry{}, d.errorf("file %s: bad marked-for-compaction field", m.FileNum)
			}
			m.MarkedForCompaction = field[0] == 1
			continue
		case customFileChecksum:
			sum, haveSum = field, true
			continue
		case customFileChecksumFuncName:
			if len(field) == 0 {
				return NewFileEntry{}, d.errorf("file %s: empty file checksum function name", m.FileNum)
			}
			m.FileChecksumFuncName = string(field)
			continue
		case customBlobFiles:
			if m.BlobFiles, err = d.blobRefs(m.FileNum, field); err != nil {
				return NewFileEntry{}, err
			}
			continue
		default:
			if tag&customSafeToIgnore == 0 {
				return NewFileEntry{}, d.errorf("file %s: unknown custom field %d", m.FileNum, tag)
			}
			continue
		}
		v, n := binary.Uvarint(field)
		if n <= 0 || n != len(field) {
			return NewFileEntry{}, d.errorf("file %s: bad custom field %d", m.FileNum, tag)
		}
		*dst = v
	}
}
