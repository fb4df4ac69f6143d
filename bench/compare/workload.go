package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
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
	// threads is how many goroutines readrandom and readwhilewriting read
	// with, each reading num keys, and how many client threads the YCSB
	// workloads run; 0 (or below) is each one's default: 1 for the reads
	// (readThreads), defaultYCSBThreads for YCSB (ycsbThreads).
	threads int
	// writers is how many goroutines fillseq, fillrandom and overwrite
	// write with, sharing the num writes; below 1 means 1.
	writers int
	// batchSize is multireadrandom's keys per multiGet (below 1:
	// defaultBatchSize).
	batchSize int
	// seekNexts is how many next calls follow each seekrandom seek.
	seekNexts int
	// reads is how many keys readrandom, readmissing, multireadrandom and
	// seekrandom read (each reading goroutine); 0 (or below): num.
	reads int64
	ycsb  ycsbConfig
}

// readCount is the operations of each goroutine of the read workloads.
func (c workloadConfig) readCount() int64 {
	if c.reads > 0 {
		return c.reads
	}
	return c.num
}

// readThreads is the goroutines of readrandom and readwhilewriting.
func (c workloadConfig) readThreads() int { return max(c.threads, 1) }

// fillWriters is the goroutines of the fill workloads.
func (c workloadConfig) fillWriters() int { return max(c.writers, 1) }

// defaultBatchSize is multireadrandom's batch, as db_bench's --batch_size.
const defaultBatchSize = 8

// session runs workloads in order against one engine, remembering whether
// the DB holds data yet.
type session struct {
	cfg    workloadConfig
	dir    string
	cfgEng engineConfig
	open   opener
	eng    engine
	rd     engineReader // the single-goroutine workloads' reader
	filled bool
	key    []byte
	values []byte
	vpos   int
	runs   int // workloads run so far, to vary the random stream
	// ycsbLoaded says ycsb_load has run on the DB: the YCSB transaction
	// workloads need its records, as the read workloads need a fill.
	ycsbLoaded bool
}

// result is one timed workload. phases, for workloads that time several
// moments of one scenario (deletescan), are printed in their own table.
type result struct {
	ops     int64
	found   int64
	elapsed time.Duration
	// p50 and p99 are the operations' latency percentiles; zero when the
	// workload times none (deletescan). p90, p999 (p99.9) and max are
	// the others --report plots.
	p50, p99       time.Duration
	p90, p999, max time.Duration
	throughput     []throughputPoint // per second; nil when untimed
	// writes counts readwhilewriting's writes, made while its readers ran.
	writes int64
	phases []phase
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

// workload is one entry of workloads.
type workload struct {
	// fresh says the workload starts from a fresh DB (the fills, deletescan,
	// ycsb_load).
	fresh bool
	// ycsb says the workload reads YCSB's records: on a DB that ycsb_load
	// has not written, ycsb_load runs first, untimed (a fillrandom for the
	// others).
	ycsb bool
	fn   func(s *session) (result, error)
}

// workloads maps a name to its workload.
var workloads = map[string]workload{
	"fillseq":          {fresh: true, fn: (*session).fillSeq},
	"fillrandom":       {fresh: true, fn: (*session).fillRandom},
	"fillsync":         {fresh: true, fn: (*session).fillSync},
	"overwrite":        {fn: (*session).overwrite},
	"readrandom":       {fn: (*session).readRandom},
	"readmissing":      {fn: (*session).readMissing},
	"multireadrandom":  {fn: (*session).multiReadRandom},
	"readseq":          {fn: (*session).readSeq},
	"seekrandom":       {fn: (*session).seekRandom},
	"readwhilewriting": {fn: (*session).readWhileWriting},
	"deletescan":       {fresh: true, fn: (*session).deleteScan},
	"ycsb_load":        {fresh: true, ycsb: true, fn: (*session).ycsbLoad},
}

func init() {
	for name := range ycsbMixes {
		workloads[name] = workload{ycsb: true, fn: func(s *session) (result, error) { return s.ycsbTransactions(name) }}
	}
}

func newSession(open opener, dir string, cfg workloadConfig, ecfg engineConfig) *session {
	if cfg.batchSize < 1 {
		cfg.batchSize = defaultBatchSize
	}
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
	switch {
	case w.fresh:
	case w.ycsb && !s.ycsbLoaded:
		if _, err := s.ycsbLoad(); err != nil {
			return result{}, err
		}
	case !w.ycsb && !s.filled:
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
	s.eng, s.rd, s.filled, s.ycsbLoaded = eng, eng.newReader(), false, false
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

func (s *session) rng() *rand.Rand { return s.threadRng(0) }

// threadRng is goroutine i's random stream in this workload; goroutine 0's
// is rng's.
func (s *session) threadRng(i int) *rand.Rand {
	return rand.New(rand.NewPCG(s.cfg.seed, uint64(s.runs)|uint64(i)<<32))
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

// fill writes num keys from cfg.fillWriters() goroutines, which share the
// writes (the first ones take one more when num does not divide); goroutine
// i draws its keys from newNext(i) and its values from a buffer position of
// its own.
func (s *session) fill(newNext func(i int) func() int64) (result, error) {
	res, err := s.fillWith(s.cfg.num, s.eng.put, newNext)
	if err == nil {
		s.filled = true
	}
	return res, err
}

// fillWith is fill of num writes through put (it does not mark the DB
// filled: fillsync writes fewer keys than the read workloads expect).
func (s *session) fillWith(num int64, put func(key, value []byte) error, newNext func(i int) func() int64) (result, error) {
	n := int(min(int64(s.cfg.fillWriters()), num))
	if n == 1 {
		next := newNext(0)
		t := newOpTimer()
		start := t.last
		for i := int64(0); i < num; i++ {
			if err := put(s.makeKey(next()), s.value()); err != nil {
				return result{}, err
			}
			t.done()
		}
		res := result{ops: num, elapsed: time.Since(start)}
		setLatency(&res, t)
		return res, nil
	}
	timers := make([]*opTimer, n)
	errs := make([]error, n)
	for i := range timers {
		timers[i] = newOpTimer()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		count := num / int64(n)
		if int64(i) < num%int64(n) {
			count++
		}
		next := newNext(i)
		wg.Go(func() {
			key := make([]byte, s.cfg.keySize)
			vsize := s.cfg.valueSize
			vpos := (i * 4099) % max(len(s.values)-vsize, 1)
			t := timers[i]
			t.restart()
			for range count {
				if vpos+vsize > len(s.values) {
					vpos = 0
				}
				benchdata.FormatKey(key, next())
				if errs[i] = put(key, s.values[vpos:vpos+vsize]); errs[i] != nil {
					return
				}
				vpos += vsize
				t.done()
			}
		})
	}
	wg.Wait()
	res := result{ops: num, elapsed: time.Since(start)}
	for _, err := range errs {
		if err != nil {
			return result{}, err
		}
	}
	setLatency(&res, timers...)
	return res, nil
}

// fillSeq writes the keys in order; with several writers they take the next
// key from one shared counter, so the keys arrive nearly in order.
func (s *session) fillSeq() (result, error) {
	var k atomic.Int64
	return s.fill(func(int) func() int64 { return func() int64 { return k.Add(1) - 1 } })
}

func (s *session) fillRandom() (result, error) {
	return s.fill(func(i int) func() int64 {
		rng := s.threadRng(i)
		return func() int64 { return rng.Int64N(s.cfg.num) }
	})
}

// fillSync is db_bench's fillsync: num/1000 (at least 1) random keys of
// [0, num), every put synced, from the fill writers.
func (s *session) fillSync() (result, error) {
	sp, ok := s.eng.(syncPutter)
	if !ok {
		return result{}, fmt.Errorf("fillsync: engine %s has no synced put", s.eng.name())
	}
	return s.fillWith(max(s.cfg.num/1000, 1), sp.putSync, func(i int) func() int64 {
		rng := s.threadRng(i)
		return func() int64 { return rng.Int64N(s.cfg.num) }
	})
}

// overwrite writes num random keys over the DB a fill left, as db_bench's
// overwrite does over fillrandom's.
func (s *session) overwrite() (result, error) { return s.fillRandom() }

// randomReads does num gets of random keys through rd, formatting them in
// key, and times each with t; it returns how many it found.
func (s *session) randomReads(rd engineReader, key []byte, rng *rand.Rand, t *opTimer) (int64, error) {
	var found int64
	for i := int64(0); i < s.cfg.readCount(); i++ {
		benchdata.FormatKey(key, rng.Int64N(s.cfg.num))
		ok, err := rd.get(key)
		if err != nil {
			return found, err
		}
		if ok {
			found++
		}
		t.done()
	}
	return found, nil
}

// warm flushes and makes one untimed pass of num random reads, which loads
// the block cache and the OS page cache.
func (s *session) warm() error {
	if err := s.eng.flush(); err != nil {
		return err
	}
	warm := rand.New(rand.NewPCG(s.cfg.seed^0x5eed, uint64(s.runs)))
	_, err := s.randomReads(s.rd, s.key, warm, newOpTimer())
	return err
}

// parallelReads runs cfg.readThreads() goroutines of readCount random reads each, every
// one with its own reader, key buffer and random stream, and returns their
// total over the time until the last one ends.
func (s *session) parallelReads() (result, error) {
	return s.parallelRun(func(i int, t *opTimer) (int64, error) {
		t.restart()
		return s.randomReads(s.eng.newReader(), make([]byte, s.cfg.keySize), s.threadRng(i), t)
	})
}

// parallelRun runs run(i, timer) in cfg.readThreads() goroutines, each
// making readCount operations and returning how many found their key, and
// returns their total over the time until the last one ends.
func (s *session) parallelRun(run func(i int, t *opTimer) (found int64, err error)) (result, error) {
	n := s.cfg.readThreads()
	timers := make([]*opTimer, n)
	found := make([]int64, n)
	errs := make([]error, n)
	for i := range timers {
		timers[i] = newOpTimer()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() { found[i], errs[i] = run(i, timers[i]) })
	}
	wg.Wait()
	res := result{ops: int64(n) * s.cfg.readCount(), elapsed: time.Since(start)}
	for i := range n {
		if errs[i] != nil {
			return result{}, errs[i]
		}
		res.found += found[i]
	}
	setLatency(&res, timers...)
	return res, nil
}

// readRandom measures warm random reads from cfg.readThreads() goroutines.
func (s *session) readRandom() (result, error) {
	if err := s.warm(); err != nil {
		return result{}, err
	}
	return s.parallelReads()
}

// readMissing is readrandom looking up keys that are not there: each key
// is a key of the DB's range with "." appended (db_bench's readmissing), so
// it sorts between two written keys and every table on its path is asked.
// Its found count must be 0.
func (s *session) readMissing() (result, error) {
	if err := s.warm(); err != nil {
		return result{}, err
	}
	return s.parallelRun(func(i int, t *opTimer) (found int64, err error) {
		rd, rng := s.eng.newReader(), s.threadRng(i)
		key := make([]byte, s.cfg.keySize+1)
		key[s.cfg.keySize] = '.'
		t.restart()
		for j := int64(0); j < s.cfg.readCount(); j++ {
			benchdata.FormatKey(key[:s.cfg.keySize], rng.Int64N(s.cfg.num))
			ok, err := rd.get(key)
			if err != nil {
				return found, err
			}
			if ok {
				found++
			}
			t.done()
		}
		return found, nil
	})
}

// readWhileWriting measures readrandom's reads while one more goroutine
// writes random keys, as fast as it can, until the readers are done; the
// result counts the reads, and the writes apart.
func (s *session) readWhileWriting() (result, error) {
	if err := s.warm(); err != nil {
		return result{}, err
	}
	var stop atomic.Bool
	var writes int64
	var werr error
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		rng := rand.New(rand.NewPCG(s.cfg.seed^0x3717e, uint64(s.runs)))
		for !stop.Load() {
			if werr = s.eng.put(s.makeKey(rng.Int64N(s.cfg.num)), s.value()); werr != nil {
				return
			}
			writes++
		}
	}()
	res, err := s.parallelReads()
	stop.Store(true)
	<-writer
	if err == nil {
		err = werr
	}
	res.writes = writes
	return res, err
}

// multiReadRandom reads num random keys, cfg.batchSize per multiGet, after
// readrandom's warm-up; its ops are keys, its latencies those of a batch.
func (s *session) multiReadRandom() (result, error) {
	if err := s.warm(); err != nil {
		return result{}, err
	}
	keys := make([][]byte, s.cfg.batchSize)
	for i := range keys {
		keys[i] = make([]byte, s.cfg.keySize)
	}
	rng := s.rng()
	t := newOpTimer()
	start := t.last
	var found int64
	for read := int64(0); read < s.cfg.readCount(); {
		batch := keys[:min(int64(len(keys)), s.cfg.readCount()-read)]
		for _, k := range batch {
			benchdata.FormatKey(k, rng.Int64N(s.cfg.num))
		}
		n, err := s.rd.multiGet(batch)
		if err != nil {
			return result{}, err
		}
		t.done()
		found += int64(n)
		read += int64(len(batch))
	}
	res := result{ops: s.cfg.readCount(), found: found, elapsed: time.Since(start)}
	setLatency(&res, t)
	return res, nil
}

// readSeq reads every key in order with one iterator, after a flush; it
// fails if a key does not follow the one before.
func (s *session) readSeq() (result, error) {
	if err := s.eng.flush(); err != nil {
		return result{}, err
	}
	it, err := s.eng.newIter()
	if err != nil {
		return result{}, err
	}
	t := newOpTimer()
	start := t.last
	var n int64
	var prev []byte
	for ok := it.seekGE(nil); ok; ok = it.next() {
		k := it.key()
		if n > 0 && bytes.Compare(prev, k) >= 0 {
			it.close()
			return result{}, fmt.Errorf("readseq: key %q after %q", k, prev)
		}
		prev = append(prev[:0], k...)
		n++
		t.done()
	}
	res := result{ops: n, found: n, elapsed: time.Since(start)}
	setLatency(&res, t)
	return res, it.close()
}

// seekRandom seeks to num random keys (the DB flushed first), each seek
// followed by cfg.seekNexts calls of next; found counts the seeks that
// land on their key.
func (s *session) seekRandom() (result, error) {
	if err := s.eng.flush(); err != nil {
		return result{}, err
	}
	it, err := s.eng.newIter()
	if err != nil {
		return result{}, err
	}
	rng := s.rng()
	t := newOpTimer()
	start := t.last
	var found int64
	for i := int64(0); i < s.cfg.readCount(); i++ {
		k := s.makeKey(rng.Int64N(s.cfg.num))
		ok := it.seekGE(k)
		if ok && bytes.Equal(it.key(), k) {
			found++
		}
		for j := 0; ok && j < s.cfg.seekNexts; j++ {
			ok = it.next()
		}
		t.done()
	}
	res := result{ops: s.cfg.readCount(), found: found, elapsed: time.Since(start)}
	setLatency(&res, t)
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
