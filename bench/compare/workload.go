package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shaledb/shale/internal/benchdata"
)

// workloadConfig describes the data every workload uses.
type workloadConfig struct {
	num       int64
	keySize   int
	valueSize int
	seed      uint64
	// deleteWait is deletescan's idle time before its second scan.
	deleteWait time.Duration
}

// session runs workloads in order against one engine, remembering whether
// the DB holds data yet.
type session struct {
	cfg    workloadConfig
	dir    string
	cfgEng engineConfig
	open   opener
	eng    engine
	filled bool
	key    []byte
	values []byte
	vpos   int
	runs   int // workloads run so far, to vary the random stream
}

// result is one timed workload. phases, for workloads that time several
// moments of one scenario (deletescan), are printed in their own table.
type result struct {
	ops     int64
	found   int64
	elapsed time.Duration
	phases  []phase
}

// phase is one timed moment of a scenario.
type phase struct {
	name    string
	elapsed time.Duration
}

func (r result) opsPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

// workloads maps a name to its function; the fill workloads start from a
// fresh DB.
var workloads = map[string]struct {
	fresh bool
	fn    func(s *session) (result, error)
}{
	"fillseq":    {true, (*session).fillSeq},
	"fillrandom": {true, (*session).fillRandom},
	"readrandom": {false, (*session).readRandom},
	"seekrandom": {false, (*session).seekRandom},
	"deletescan": {true, (*session).deleteScan},
}

func newSession(open opener, dir string, cfg workloadConfig, ecfg engineConfig) *session {
	return &session{
		cfg:    cfg,
		dir:    dir,
		cfgEng: ecfg,
		open:   open,
		key:    make([]byte, cfg.keySize),
		values: benchdata.CompressibleBytes(max(1<<20, 2*cfg.valueSize), 0.5),
	}
}

// run runs one workload by name; it opens (or recreates) the engine as needed.
func (s *session) run(name string) (result, error) {
	w, ok := workloads[name]
	if !ok {
		return result{}, fmt.Errorf("unknown workload %q", name)
	}
	if w.fresh || s.eng == nil {
		if err := s.reopenFresh(); err != nil {
			return result{}, err
		}
	}
	if !w.fresh && !s.filled {
		if _, err := s.fillRandom(); err != nil {
			return result{}, err
		}
	}
	s.runs++
	return w.fn(s)
}

func (s *session) reopenFresh() error {
	if s.eng != nil {
		if err := s.eng.close(); err != nil {
			return err
		}
		s.eng = nil
	}
	if err := removeAll(s.dir); err != nil {
		return err
	}
	eng, err := s.open(s.dir, s.cfgEng)
	if err != nil {
		return err
	}
	s.eng, s.filled = eng, false
	return nil
}

func (s *session) close() error {
	if s.eng == nil {
		return nil
	}
	err := s.eng.close()
	s.eng = nil
	return err
}

func (s *session) rng() *rand.Rand {
	return rand.New(rand.NewPCG(s.cfg.seed, uint64(s.runs)))
}

func (s *session) makeKey(k int64) []byte {
	benchdata.FormatKey(s.key, k)
	return s.key
}

func (s *session) value() []byte {
	n := s.cfg.valueSize
	if s.vpos+n > len(s.values) {
		s.vpos = 0
	}
	v := s.values[s.vpos : s.vpos+n]
	s.vpos += n
	return v
}

func (s *session) fill(next func() int64) (result, error) {
	start := time.Now()
	for i := int64(0); i < s.cfg.num; i++ {
		if err := s.eng.put(s.makeKey(next()), s.value()); err != nil {
			return result{}, err
		}
	}
	s.filled = true
	return result{ops: s.cfg.num, elapsed: time.Since(start)}, nil
}

func (s *session) fillSeq() (result, error) {
	var k int64
	return s.fill(func() int64 { k++; return k - 1 })
}

func (s *session) fillRandom() (result, error) {
	rng := s.rng()
	return s.fill(func() int64 { return rng.Int64N(s.cfg.num) })
}

func (s *session) reads(rng *rand.Rand) (result, error) {
	start := time.Now()
	var found int64
	for i := int64(0); i < s.cfg.num; i++ {
		ok, err := s.eng.get(s.makeKey(rng.Int64N(s.cfg.num)))
		if err != nil {
			return result{}, err
		}
		if ok {
			found++
		}
	}
	return result{ops: s.cfg.num, found: found, elapsed: time.Since(start)}, nil
}

// readRandom measures warm random reads: flushed, and after one untimed pass
// of random reads has loaded the cache and the OS page cache.
func (s *session) readRandom() (result, error) {
	if err := s.eng.flush(); err != nil {
		return result{}, err
	}
	warm := rand.New(rand.NewPCG(s.cfg.seed^0x5eed, uint64(s.runs)))
	if _, err := s.reads(warm); err != nil {
		return result{}, err
	}
	return s.reads(s.rng())
}

func (s *session) seekRandom() (result, error) {
	if err := s.eng.flush(); err != nil {
		return result{}, err
	}
	it, err := s.eng.newIter()
	if err != nil {
		return result{}, err
	}
	rng := s.rng()
	start := time.Now()
	var found int64
	for i := int64(0); i < s.cfg.num; i++ {
		k := s.makeKey(rng.Int64N(s.cfg.num))
		if it.seekGE(k) && bytes.Equal(it.key(), k) {
			found++
		}
	}
	res := result{ops: s.cfg.num, found: found, elapsed: time.Since(start)}
	return res, it.close()
}

// The delete scan of issue 12 (shale bench's deletescan): num keys written
// in order with deleteScanValueSize-byte values, the lowest 90% deleted one
// by one, then the first deleteScanLive live keys read from the start with a
// new iterator, right after the deletes, after deleteWait of idle time, and
// after a full manual compaction.
const (
	deleteScanValueSize = 500
	deleteScanLive      = 500
)

func (s *session) deleteScan() (result, error) {
	vs := s.cfg.valueSize
	s.cfg.valueSize = deleteScanValueSize
	defer func() { s.cfg.valueSize = vs }()
	if _, err := s.fillSeq(); err != nil {
		return result{}, err
	}
	deleted := s.cfg.num - s.cfg.num/10
	for k := int64(0); k < deleted; k++ {
		if err := s.eng.delete(s.makeKey(k)); err != nil {
			return result{}, err
		}
	}
	var res result
	scan := func(name string) error {
		start := time.Now()
		it, err := s.eng.newIter()
		if err != nil {
			return err
		}
		n := 0
		for ok := it.seekGE(nil); ok && n < deleteScanLive; ok = it.next() {
			n++
		}
		elapsed := time.Since(start)
		if err := it.close(); err != nil {
			return err
		}
		if want := min(int64(deleteScanLive), s.cfg.num-deleted); int64(n) != want {
			return fmt.Errorf("deletescan %s: read %d live keys, want %d", name, n, want)
		}
		res.phases = append(res.phases, phase{name, elapsed})
		res.ops += int64(n)
		res.elapsed += elapsed
		return nil
	}
	if err := scan("after deletes"); err != nil {
		return result{}, err
	}
	time.Sleep(s.cfg.deleteWait)
	if err := scan(fmt.Sprintf("after %v idle", s.cfg.deleteWait)); err != nil {
		return result{}, err
	}
	if err := s.eng.compactAll(); err != nil {
		return result{}, err
	}
	if err := scan("after full compaction"); err != nil {
		return result{}, err
	}
	return res, nil
}
