package base

import (
	"encoding/binary"
	"fmt"
)

// SeqNum is a 56-bit sequence number, one per written entry, assigned at commit.
type SeqNum uint64

const (
	// SeqNumMax is the largest sequence number an entry can carry. It is also
	// used as the seqnum of search keys and of exclusive range sentinels.
	SeqNumMax SeqNum = 1<<56 - 1
	// SeqNumStart is the first sequence number assigned to a write; 0 is
	// reserved for entries whose seqnum has been zeroed at the bottom level.
	SeqNumStart SeqNum = 1
)

// Kind says what an entry is. The values match RocksDB's ValueType so that
// the on-disk formats read the same way.
type Kind uint8

// The kinds. Merge and BlobIndex are reserved by the formats now and used by
// later features.
const (
	KindDelete       Kind = 0x00
	KindSet          Kind = 0x01
	KindMerge        Kind = 0x02
	KindLogData      Kind = 0x03
	KindSingleDelete Kind = 0x07
	KindRangeDelete  Kind = 0x0F
	KindBlobIndex    Kind = 0x11
	// KindMax is the largest kind; a search key uses it so that it sorts
	// before every entry of the same user key and seqnum.
	KindMax Kind = 0x11
)

var kindNames = map[Kind]string{
	KindDelete: "DEL", KindSet: "SET", KindMerge: "MERGE", KindLogData: "LOGDATA",
	KindSingleDelete: "SINGLEDEL", KindRangeDelete: "RANGEDEL", KindBlobIndex: "BLOBINDEX",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("KIND(%d)", uint8(k))
}

// Valid reports whether k is a kind that may appear in a stored entry.
func (k Kind) Valid() bool {
	_, ok := kindNames[k]
	return ok
}

// IsTombstone reports whether an entry of kind k deletes the user key.
func (k Kind) IsTombstone() bool {
	return k == KindDelete || k == KindSingleDelete
}

// MakeTrailer packs a seqnum and kind into the 8-byte trailer.
func MakeTrailer(seq SeqNum, kind Kind) uint64 {
	return uint64(seq)<<8 | uint64(kind)
}

// InternalKey is a user key with its seqnum and kind.
type InternalKey struct {
	UserKey []byte
	Trailer uint64
}

// MakeInternalKey returns the internal key for (userKey, seq, kind).
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: MakeTrailer(seq, kind)}
}

// MakeSearchKey returns the internal key that sorts before every entry of
// userKey: seeking to it lands on the newest version.
func MakeSearchKey(userKey []byte) InternalKey {
	return MakeInternalKey(userKey, SeqNumMax, KindMax)
}

// MakeRangeDeleteSentinel returns the key used as the exclusive largest key of
// a file whose range tombstone ends at end: it sorts before every real entry
// of user key end.
func MakeRangeDeleteSentinel(end []byte) InternalKey {
	return MakeInternalKey(end, SeqNumMax, KindRangeDelete)
}

// SeqNum returns the key's sequence number.
func (k InternalKey) SeqNum() SeqNum { return SeqNum(k.Trailer >> 8) }

// Kind returns the key's kind.
func (k InternalKey) Kind() Kind { return Kind(k.Trailer & 0xff) }

// IsExclusiveSentinel reports whether k is a range-delete sentinel: the user
// key itself is not part of the range it bounds.
func (k InternalKey) IsExclusiveSentinel() bool {
	return k.Trailer == MakeTrailer(SeqNumMax, KindRangeDelete)
}

// Size returns the encoded length of k.
func (k InternalKey) Size() int { return len(k.UserKey) + 8 }

// Encode writes k into buf, which must be at least k.Size() bytes.
func (k InternalKey) Encode(buf []byte) {
	n := copy(buf, k.UserKey)
	binary.LittleEndian.PutUint64(buf[n:], k.Trailer)
}

// AppendEncoded appends the encoding of k to dst.
func (k InternalKey) AppendEncoded(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.Trailer)
}

// Clone returns a copy of k that owns its user key bytes.
func (k InternalKey) Clone() InternalKey {
	if k.UserKey == nil {
		return k
	}
	return InternalKey{UserKey: append([]byte(nil), k.UserKey...), Trailer: k.Trailer}
}

// String formats k as "key#seq,KIND".
func (k InternalKey) String() string {
	return fmt.Sprintf("%q#%d,%s", k.UserKey, k.SeqNum(), k.Kind())
}

// DecodeInternalKey splits an encoded internal key. ok is false when the
// encoding is shorter than a trailer; the user key aliases encoded.
func DecodeInternalKey(encoded []byte) (k InternalKey, ok bool) {
	n := len(encoded) - 8
	if n < 0 {
		return InternalKey{}, false
	}
	return InternalKey{
		UserKey: encoded[:n:n],
		Trailer: binary.LittleEndian.Uint64(encoded[n:]),
	}, true
}

// InternalCompare orders internal keys: user key ascending by cmp, then
// trailer descending.
func InternalCompare(cmp Compare, a, b InternalKey) int {
	if c := cmp(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}

// Visible reports whether an entry at seq is visible to a reader at snapshot:
// a snapshot sees every entry committed at or before it.
func Visible(seq, snapshot SeqNum) bool { return seq <= snapshot }

// KeyForError returns k cut to 64 bytes, for an error message to quote.
func KeyForError(k []byte) []byte {
	if len(k) > 64 {
		return k[:64]
	}
	return k
}
