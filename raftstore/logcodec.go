package raftstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shaledb/shale"
)

// logFormatVersion is the first byte of every encoded log entry.
const logFormatVersion = 1

// appendLog appends the version-1 encoding of l to dst.
func appendLog(dst []byte, l *raft.Log) []byte {
	dst = append(dst, logFormatVersion)
	dst = binary.AppendUvarint(dst, l.Index)
	dst = binary.AppendUvarint(dst, l.Term)
	dst = append(dst, byte(l.Type))
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	dst = append(dst, l.Extensions...)
	if l.AppendedAt.IsZero() {
		dst = append(dst, 0)
	} else {
		dst = append(dst, 1)
		dst = binary.AppendVarint(dst, l.AppendedAt.UnixNano())
	}
	return dst
}

// corruptLog is the error of an entry that does not decode.
func corruptLog(index uint64, what string) error {
	return fmt.Errorf("shale: raftstore: log entry %d: %s: %w", index, what, shale.ErrCorruption)
}

// decodeLog decodes the entry stored under index into l. Data and
// Extensions are copies, so l outlives buf.
func decodeLog(index uint64, buf []byte, l *raft.Log) error {
	if len(buf) == 0 {
		return corruptLog(index, "empty value")
	}
	if buf[0] != logFormatVersion {
		return corruptLog(index, fmt.Sprintf("unknown format version %d", buf[0]))
	}
	p := buf[1:]
	uvarint := func(what string) (uint64, error) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, corruptLog(index, "bad "+what)
		}
		p = p[n:]
		return v, nil
	}
	bytesField := func(what string) ([]byte, error) {
		n, err := uvarint(what + " length")
		if err != nil {
			return nil, err
		}
		if n > uint64(len(p)) {
			return nil, corruptLog(index, fmt.Sprintf("%s length %d past the end (%d bytes left)", what, n, len(p)))
		}
		var b []byte
		if n > 0 {
			b = append([]byte(nil), p[:n]...)
		}
		p = p[n:]
		return b, nil
	}
	idx, err := uvarint("index")
	if err != nil {
		return err
	}
	if idx != index {
		return corruptLog(index, fmt.Sprintf("holds index %d", idx))
	}
	term, err := uvarint("term")
	if err != nil {
		return err
	}
	if len(p) < 1 {
		return corruptLog(index, "truncated before the type")
	}
	typ := raft.LogType(p[0])
	p = p[1:]
	data, err := bytesField("data")
	if err != nil {
		return err
	}
	ext, err := bytesField("extensions")
	if err != nil {
		return err
	}
	if len(p) < 1 {
		return corruptLog(index, "truncated before appended_at")
	}
	var at time.Time
	switch p[0] {
	case 0:
		p = p[1:]
	case 1:
		v, n := binary.Varint(p[1:])
		if n <= 0 {
			return corruptLog(index, "bad appended_at")
		}
		at = time.Unix(0, v)
		p = p[1+n:]
	default:
		return corruptLog(index, fmt.Sprintf("bad appended_at flag %d", p[0]))
	}
	if len(p) != 0 {
		return corruptLog(index, fmt.Sprintf("%d trailing bytes", len(p)))
	}
	*l = raft.Log{Index: idx, Term: term, Type: typ, Data: data, Extensions: ext, AppendedAt: at}
	return nil
}
