package vfs

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// blockingFile is a File whose ReadAt takes delay and cannot be interrupted,
// like a pread of a slow device.
type blockingFile struct {
	File
	delay time.Duration
	reads atomic.Int32
}

func (f *blockingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	time.Sleep(f.delay)
	return f.File.ReadAt(p, off)
}

func newBlockingFile(t *testing.T, delay time.Duration) *blockingFile {
	t.Helper()
	fs := NewMem()
	f, err := fs.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	return &blockingFile{File: f, delay: delay}
}

// TestReadAtDeadlinePastDoesNoIO checks that a deadline already past
// returns ErrDeadlineExceeded without calling the file.
func TestReadAtDeadlinePastDoesNoIO(t *testing.T) {
	f := newBlockingFile(t, 0)
	_, err := ReadAtDeadline(f, make([]byte, 10), 0, time.Now().Add(-time.Second))
	if !errors.Is(err, ErrDeadlineExceeded) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err %v, want ErrDeadlineExceeded", err)
	}
	if n := f.reads.Load(); n != 0 {
		t.Fatalf("%d reads made past the deadline", n)
	}
	// No deadline, or one far off: an ordinary read.
	for _, dl := range []time.Time{{}, time.Now().Add(time.Hour)} {
		if n, err := ReadAtDeadline(f, make([]byte, 10), 0, dl); n != 10 || err != nil {
			t.Fatalf("deadline %v: %d, %v", dl, n, err)
		}
	}
}

// TestReadAtDeadlineUninterruptibleRead checks that a plain ReadAt that
// outlives its deadline is not interrupted but reports the timeout.
func TestReadAtDeadlineUninterruptibleRead(t *testing.T) {
	f := newBlockingFile(t, 300*time.Millisecond)
	start := time.Now()
	_, err := ReadAtDeadline(f, make([]byte, 10), 0, start.Add(20*time.Millisecond))
	if !errors.Is(err, ErrDeadlineExceeded) {
		t.Fatalf("err %v, want ErrDeadlineExceeded", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("returned after %v: the read cannot have been interrupted", el)
	}
}

// deadlineFile honors deadlines itself, as the latency FS does.
type deadlineFile struct{ *blockingFile }

func (f deadlineFile) ReadAtDeadline(p []byte, off int64, deadline time.Time) (int, error) {
	time.Sleep(time.Until(deadline))
	return 0, TimeoutError("read", f, off)
}

// TestPortableReaderDeadline checks that the portable reader bounds a
// request with a Deadline through ReadAtDeadline: a file that can stop at
// the deadline does, and a deadline already past reads nothing.
func TestPortableReaderDeadline(t *testing.T) {
	r := newPortableReader(AsyncOptions{QueueDepth: 4})
	defer r.Close()
	sf := newBlockingFile(t, 5*time.Second)
	start := time.Now()
	reqs := []ReadRequest{
		{File: deadlineFile{sf}, Buf: make([]byte, 10), Deadline: start.Add(50 * time.Millisecond)},
		{File: sf, Buf: make([]byte, 10), Deadline: start.Add(-time.Second)},
	}
	b := r.Submit(reqs)
	if err := b.Wait(); !errors.Is(err, ErrDeadlineExceeded) {
		t.Fatalf("err %v, want ErrDeadlineExceeded", err)
	}
	b.Release()
	for i := range reqs {
		if !errors.Is(reqs[i].Err, ErrDeadlineExceeded) {
			t.Errorf("request %d: %v", i, reqs[i].Err)
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %v", el)
	}
	if n := sf.reads.Load(); n != 0 {
		t.Fatalf("%d reads of the slow file", n)
	}
}

func TestReadDeadlineForRead(t *testing.T) {
	var zero ReadDeadline
	if !zero.IsZero() || !zero.ForRead().IsZero() || zero.Expired() {
		t.Fatal("the zero ReadDeadline bounds something")
	}
	far := time.Now().Add(time.Hour)
	d := ReadDeadline{Deadline: far, IOTimeout: time.Second}
	if got := d.ForRead(); !got.Before(far) || time.Until(got) > time.Second {
		t.Fatalf("ForRead %v: want about now+1s", got)
	}
	near := time.Now().Add(time.Millisecond)
	d = ReadDeadline{Deadline: near, IOTimeout: time.Hour}
	if got := d.ForRead(); !got.Equal(near) {
		t.Fatalf("ForRead %v, want the Deadline %v", got, near)
	}
	if (ReadDeadline{Deadline: time.Now().Add(-time.Second)}).Expired() != true {
		t.Fatal("a past Deadline is not expired")
	}
}
