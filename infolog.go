package shale

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shaledb/shale/vfs"
)

// infoLogFile is the DB's LOG: a text event log that starts anew at every
// Open and, with Options.MaxLogFileSize, whenever it grows past that size.
// The previous LOG is renamed LOG.old.<microseconds since 1970> (RocksDB's
// names) and only the newest Options.KeepLogFileNum old logs are kept.
type infoLogFile struct {
	fs      vfs.FS
	dir     string
	keep    int
	maxSize int64

	mu   sync.Mutex
	f    vfs.File
	size int64
	// err is the first failure to rotate: logging goes on in the old file.
	err error
}

const infoLogName = "LOG"

// infoLogOldPrefix starts the names of old LOG files.
const infoLogOldPrefix = "LOG.old"

func openInfoLogFile(fs vfs.FS, dir string, keep int, maxSize int64) (*infoLogFile, error) {
	l := &infoLogFile{fs: fs, dir: dir, keep: keep, maxSize: maxSize}
	if err := l.rotate(); err != nil {
		return nil, fmt.Errorf("shale: creating LOG: %w", err)
	}
	return l, nil
}

// rotate moves LOG aside (when there is one), prunes old logs and starts a
// new LOG. l.mu is held, or l is not yet shared.
func (l *infoLogFile) rotate() error {
	name := l.fs.PathJoin(l.dir, infoLogName)
	if l.f != nil {
		if err := l.f.Close(); err != nil {
			return err
		}
		l.f = nil
	}
	if _, err := l.fs.Stat(name); err == nil {
		old := l.oldName(time.Now())
		if err := l.fs.Rename(name, old); err != nil {
			return err
		}
	}
	l.prune()
	f, err := l.fs.Create(name)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	return nil
}

// oldName returns an unused LOG.old.<micros> name for a log rotated at t.
func (l *infoLogFile) oldName(t time.Time) string {
	us := t.UnixMicro()
	for {
		name := l.fs.PathJoin(l.dir, infoLogOldPrefix+"."+strconv.FormatInt(us, 10))
		if _, err := l.fs.Stat(name); err != nil {
			return name
		}
		us++
	}
}

// prune removes the oldest old logs beyond l.keep. A plain "LOG.old" (the
// name older versions used) counts as the oldest.
func (l *infoLogFile) prune() {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return
	}
	type oldLog struct {
		name string
		us   int64
	}
	var olds []oldLog
	for _, n := range names {
		switch {
		case n == infoLogOldPrefix:
			olds = append(olds, oldLog{n, -1})
		case strings.HasPrefix(n, infoLogOldPrefix+"."):
			us, err := strconv.ParseInt(n[len(infoLogOldPrefix)+1:], 10, 64)
			if err == nil {
				olds = append(olds, oldLog{n, us})
			}
		}
	}
	if len(olds) <= l.keep {
		return
	}
	slices.SortFunc(olds, func(a, b oldLog) int { return cmp.Compare(a.us, b.us) })
	for _, o := range olds[:len(olds)-l.keep] {
		_ = l.fs.Remove(l.fs.PathJoin(l.dir, o.name))
	}
}

// Write appends one log line, first starting a new LOG when this one is
// past MaxLogFileSize.
func (l *infoLogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, errors.New("shale: LOG is closed")
	}
	if l.maxSize > 0 && l.size > 0 && l.size+int64(len(p)) > l.maxSize && l.err == nil {
		if err := l.rotate(); err != nil {
			l.err = err
			if l.f == nil {
				return 0, err
			}
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// Close closes the LOG.
func (l *infoLogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
