package itertest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
)

// The notation of the data-driven test scripts, shared so that every
// package's scripts read the same way:
//
//	a.SET.5        internal key: user key, kind, seqnum
//	a.SET.5:v1     entry: an internal key and its value (nil without a colon)
//	b.KIND(66).3   a kind with no name, as base.Kind prints it
//	[a,c)#7        range tombstone deleting a <= k < c below seqnum 7
//	[a,c)#9,7      fragmented span with its seqnums, newest first
//
// User keys are written as they are, so they may not hold white space, a
// ':' (in an entry), or a ',' or ')' (in a tombstone or span).

// ParseKind parses a kind as base.Kind.String prints it: "SET", "DEL",
// "KIND(66)".
func ParseKind(s string) (base.Kind, error) {
	for k := range 256 {
		if base.Kind(k).Valid() && base.Kind(k).String() == s {
			return base.Kind(k), nil
		}
	}
	if n, ok := strings.CutPrefix(s, "KIND("); ok {
		if n, ok := strings.CutSuffix(n, ")"); ok {
			v, err := strconv.ParseUint(n, 10, 8)
			if err == nil {
				return base.Kind(v), nil
			}
		}
	}
	return 0, fmt.Errorf("itertest: unknown kind %q", s)
}

// ParseInternalKey parses "a.SET.5".
func ParseInternalKey(s string) (base.InternalKey, error) {
	i := strings.LastIndexByte(s, '.')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(s[:i], '.')
	}
	if j < 0 {
		return base.InternalKey{}, fmt.Errorf("itertest: internal key %q is not key.KIND.seq", s)
	}
	kind, err := ParseKind(s[j+1 : i])
	if err != nil {
		return base.InternalKey{}, err
	}
	seq, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil || base.SeqNum(seq) > base.SeqNumMax {
		return base.InternalKey{}, fmt.Errorf("itertest: bad seqnum in %q", s)
	}
	return base.MakeInternalKey([]byte(s[:j]), base.SeqNum(seq), kind), nil
}

// ParseEntry parses "a.SET.5:v1"; without a colon the value is nil.
func ParseEntry(s string) (Entry, error) {
	k, v, hasValue := strings.Cut(s, ":")
	key, err := ParseInternalKey(k)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Key: key}
	if hasValue {
		e.Value = []byte(v)
	}
	return e, nil
}

// ParseEntries parses entries separated by white space, in the order given.
func ParseEntries(s string) ([]Entry, error) { return parseFields(s, ParseEntry) }

// parseFields parses each white-space separated field of s with parse, in
// order; nil for no fields.
func parseFields[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var ts []T
	for _, f := range strings.Fields(s) {
		t, err := parse(f)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// FormatKey formats k as ParseInternalKey reads it.
func FormatKey(k base.InternalKey) string {
	return fmt.Sprintf("%s.%s.%d", k.UserKey, k.Kind(), k.SeqNum())
}

// FormatEntry formats an entry as ParseEntry reads it, leaving out an empty
// value.
func FormatEntry(k base.InternalKey, value []byte) string {
	if len(value) == 0 {
		return FormatKey(k)
	}
	return FormatKey(k) + ":" + string(value)
}

// parseBracket splits "[a,c)#rest" into its keys and what follows '#'.
func parseBracket(s string) (start, end, rest string, hasSeqs bool, err error) {
	body, ok := strings.CutPrefix(s, "[")
	if !ok {
		return "", "", "", false, fmt.Errorf("itertest: %q does not start with '['", s)
	}
	keys, rest, ok := strings.Cut(body, ")")
	start, end, ok2 := strings.Cut(keys, ",")
	if !ok || !ok2 {
		return "", "", "", false, fmt.Errorf("itertest: %q is not [start,end)", s)
	}
	if rest == "" {
		return start, end, "", false, nil
	}
	rest, ok = strings.CutPrefix(rest, "#")
	if !ok {
		return "", "", "", false, fmt.Errorf("itertest: %q: want '#' after ')'", s)
	}
	return start, end, rest, true, nil
}

// ParseTombstone parses "[a,c)#7".
func ParseTombstone(s string) (rangedel.Tombstone, error) {
	start, end, rest, hasSeq, err := parseBracket(s)
	if err != nil {
		return rangedel.Tombstone{}, err
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	if !hasSeq || err != nil {
		return rangedel.Tombstone{}, fmt.Errorf("itertest: tombstone %q needs one seqnum", s)
	}
	return rangedel.Tombstone{Start: []byte(start), End: []byte(end), Seq: base.SeqNum(seq)}, nil
}

// ParseTombstones parses tombstones separated by white space.
func ParseTombstones(s string) ([]rangedel.Tombstone, error) { return parseFields(s, ParseTombstone) }

// FormatTombstone formats a tombstone as ParseTombstone reads it.
func FormatTombstone(start, end []byte, seq base.SeqNum) string {
	return fmt.Sprintf("[%s,%s)#%d", start, end, seq)
}

// ParseSpan parses "[a,c)#9,7"; "[a,c)" is a span with no seqnums, which
// only a test of malformed spans wants. The seqnums are kept in the order
// written.
func ParseSpan(s string) (rangedel.Span, error) {
	start, end, rest, hasSeqs, err := parseBracket(s)
	if err != nil {
		return rangedel.Span{}, err
	}
	sp := rangedel.Span{Start: []byte(start), End: []byte(end)}
	if !hasSeqs {
		return sp, nil
	}
	for _, f := range strings.Split(rest, ",") {
		seq, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return rangedel.Span{}, fmt.Errorf("itertest: bad seqnum in span %q", s)
		}
		sp.Seqs = append(sp.Seqs, base.SeqNum(seq))
	}
	return sp, nil
}

// FormatSpan formats a span as ParseSpan reads it.
func FormatSpan(sp rangedel.Span) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s,%s)", sp.Start, sp.End)
	for i, seq := range sp.Seqs {
		if i == 0 {
			b.WriteByte('#')
		} else {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, uint64(seq))
	}
	return b.String()
}
