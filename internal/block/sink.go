package block

import "github.com/shaledb/shale/vfs"

// maxPreallocStep bounds one preallocation, whatever the target size says.
const maxPreallocStep = 1 << 30

// Sink is what a file writer's buffer writes to (tables and blob files): it
// appends to the file, preallocating ahead of the writes and starting
// writeback every BytesPerSync bytes. It is not safe for concurrent use.
type Sink struct {
	f vfs.File
	// written is the file size so far; preallocated the end of the space
	// reserved ahead (a multiple of step); writebackAt the end of the
	// range whose writeback was last started.
	written, preallocated, writebackAt int64
	step, bytesPerSync                 int64
	// extended is the end of zeros written ahead of the data (NoteExtended).
	extended int64
}

// NewSink returns a Sink appending to f. targetSize > 0 preallocates in
// steps of about targetSize (plus 10%); bytesPerSync > 0 starts writeback
// every that many bytes.
func NewSink(f vfs.File, targetSize, bytesPerSync int64) Sink {
	s := Sink{f: f, bytesPerSync: bytesPerSync}
	if targetSize > 0 {
		s.step = min(targetSize+targetSize/10, maxPreallocStep)
	}
	return s
}

// Write appends p to the file.
func (s *Sink) Write(p []byte) (int, error) {
	end := s.written + int64(len(p))
	if s.step > 0 && end > s.preallocated {
		next := (end + s.step - 1) / s.step * s.step
		if err := s.f.Preallocate(s.preallocated, next-s.preallocated); err != nil {
			// Preallocation is a hint (as in RocksDB, whose fallocate
			// failures are ignored): stop reserving, and let the write
			// itself report a full disk.
			s.step = 0
		} else {
			s.preallocated = next
		}
	}
	n, err := s.f.Write(p)
	s.written += int64(n)
	if err != nil {
		return n, err
	}
	if s.bytesPerSync > 0 && s.written-s.writebackAt >= s.bytesPerSync {
		if err := s.f.StartWriteback(s.writebackAt, s.written-s.writebackAt); err != nil {
			// Only a hint too: the final sync makes the data durable.
			s.bytesPerSync = 0
		}
		s.writebackAt = s.written
	}
	return n, nil
}

// Written returns the bytes written to the file so far.
func (s *Sink) Written() int64 { return s.written }

// NoteExtended records that the file was extended to end with zeros
// written ahead of the data (vfs.WriteZeros), which Trim cuts off.
func (s *Sink) NoteExtended(end int64) { s.extended = max(s.extended, end) }

// Trim gives back the space reserved past the end of what was written
// (fallocate with KEEP_SIZE holds it until the file is cut to its size)
// and the zeros written ahead of it; call it once the last byte is
// written.
func (s *Sink) Trim() error {
	if max(s.preallocated, s.extended) > s.written {
		return s.f.Truncate(s.written)
	}
	return nil
}
