package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

const (
	bankAccounts = 16
	bankInitial  = 1000
)

func bankKey(i int) []byte { return []byte(fmt.Sprintf("acct%03d", i)) }

// bankTotal sums the balances read through it, failing on a missing or
// negative account.
func bankTotal(it *Iterator) (int, error) {
	defer it.Close()
	total, n := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		v, err := strconv.Atoi(string(it.Value()))
		if err != nil || v < 0 {
			return 0, fmt.Errorf("account %q holds %q", it.Key(), it.Value())
		}
		total += v
		n++
	}
	if err := it.Err(); err != nil {
		return 0, err
	}
	if n != bankAccounts {
		return 0, fmt.Errorf("%d accounts, want %d", n, bankAccounts)
	}
	return total, nil
}

// retryable reports whether a transaction failed on a conflict, a
// deadlock or a lock timeout, to be retried.
func retryable(err error) bool {
	return errors.Is(err, ErrBusy) || errors.Is(err, ErrDeadlock) || errors.Is(err, ErrTimedOut)
}

// TestTransactionBankTransfer moves money between accounts from
// concurrent goroutines in transactions (optimistic and pessimistic,
// pessimistic ones locking in random order so that deadlocks happen),
// retrying on ErrBusy, ErrDeadlock and ErrTimedOut. The total balance must
// be exact at random snapshots (by iterator and by Gets), inside
// transactions reading their own writes over their snapshot, in crash
// clones of the file system taken while transfers run (some commits
// synced, some not: a crash keeps a prefix of whole batches), and after
// Close and reopen. Small memtables make flushes and compactions run under
// the transfers.
func TestTransactionBankTransfer(t *testing.T) {
	for _, kind := range []string{"optimistic", "pessimistic"} {
		t.Run(kind, func(t *testing.T) { runBankTransfer(t, kind == "pessimistic") })
	}
}

func runBankTransfer(t *testing.T, pessimistic bool) {
	const want = bankAccounts * bankInitial
	transfers := 300
	if testing.Short() {
		transfers = 100
	}
	if stress() {
		transfers = 3000
	}
	const workers = 4
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.Logger = discardLogger()
	tdb, err := OpenTransactionDB("/db", opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := tdb.DB
	b := db.NewBatch()
	for i := range bankAccounts {
		b.Put(bankKey(i), []byte(strconv.Itoa(bankInitial)))
	}
	must(t, db.Write(b, &WriteOptions{Sync: true}))

	begin := func(wo *WriteOptions, snapshot bool) *Transaction {
		if pessimistic {
			return tdb.BeginTransaction(wo, &TxnOptions{SetSnapshot: snapshot})
		}
		return db.BeginOptimisticTransaction(wo, &OptimisticTxnOptions{SetSnapshot: snapshot})
	}
	var commits, busy, deadlocks, timeouts atomic.Int64
	var failure atomic.Pointer[error]
	fail := func(err error) { failure.CompareAndSwap(nil, &err) }

	// transfer moves a random amount from a to b, reading at the
	// transaction's snapshot when snap is set, and then checks the total
	// the transaction sees over that snapshot.
	transfer := func(rng *rand.Rand, a, b int, snap bool) error {
		wo := &WriteOptions{Sync: rng.IntN(2) == 0}
		txn := begin(wo, snap)
		var ro *ReadOptions
		if snap {
			ro = &ReadOptions{Snapshot: txn.GetSnapshot()}
		}
		abort := func(err error) error {
			if rerr := txn.Rollback(); rerr != nil {
				return rerr
			}
			return err
		}
		va, err := txn.GetForUpdate(ro, bankKey(a))
		if err != nil {
			return abort(err)
		}
		vb, err := txn.GetForUpdate(ro, bankKey(b))
		if err != nil {
			return abort(err)
		}
		x, _ := strconv.Atoi(string(va))
		y, _ := strconv.Atoi(string(vb))
		amount := rng.IntN(x + 1)
		if err := txn.Put(bankKey(a), []byte(strconv.Itoa(x-amount))); err != nil {
			return abort(err)
		}
		if err := txn.Put(bankKey(b), []byte(strconv.Itoa(y+amount))); err != nil {
			return abort(err)
		}
		if snap {
			// The transaction's own writes over its snapshot keep the
			// total: its reads were at the snapshot too.
			got, err := bankTotal(txn.NewIterator(ro))
			if err != nil {
				return abort(err)
			}
			if got != want {
				return abort(fmt.Errorf("inside a transaction over its snapshot: total %d, want %d", got, want))
			}
		}
		return txn.Commit()
	}

	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for range transfers {
				a := rng.IntN(bankAccounts)
				b := (a + 1 + rng.IntN(bankAccounts-1)) % bankAccounts
				snap := rng.IntN(4) == 0
				for attempt := 0; ; attempt++ {
					if failure.Load() != nil {
						return
					}
					err := transfer(rng, a, b, snap)
					switch {
					case err == nil:
						commits.Add(1)
					case errors.Is(err, ErrBusy):
						busy.Add(1)
						continue
					case errors.Is(err, ErrDeadlock):
						deadlocks.Add(1)
						continue
					case errors.Is(err, ErrTimedOut):
						timeouts.Add(1)
						continue
					default:
						fail(err)
						return
					}
					break
				}
			}
		}()
	}
	// The auditor: the total at random snapshots, by iterator and by Gets,
	// and crash clones taken while transfers run.
	var clones []*vfs.MemFS
	done := make(chan struct{})
	var auditWG sync.WaitGroup
	auditWG.Add(1)
	go func() {
		defer auditWG.Done()
		rng := rand.New(rand.NewPCG(7, 7))
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(rng.IntN(3000)) * time.Microsecond):
			}
			snap := db.NewSnapshot()
			got, err := bankTotal(db.NewIterator(&ReadOptions{Snapshot: snap}))
			if err == nil && got != want {
				err = fmt.Errorf("iterator at snapshot %d: total %d, want %d", snap.SeqNum(), got, want)
			}
			sum := 0
			for i := range bankAccounts {
				v, gerr := db.Get(bankKey(i), &ReadOptions{Snapshot: snap})
				n, _ := strconv.Atoi(string(v))
				sum += n
				if gerr != nil && err == nil {
					err = gerr
				}
			}
			if err == nil && sum != want {
				err = fmt.Errorf("Gets at snapshot %d: total %d, want %d", snap.SeqNum(), sum, want)
			}
			snap.Release()
			if err != nil {
				fail(err)
				return
			}
			if rng.IntN(2) == 0 && len(clones) < 3 {
				clones = append(clones, mem.CrashClone())
			}
		}
	}()
	wg.Wait()
	close(done)
	auditWG.Wait()
	if p := failure.Load(); p != nil {
		t.Fatal(*p)
	}
	if got := commits.Load(); got != workers*int64(transfers) {
		t.Fatalf("%d commits, want %d", got, workers*transfers)
	}
	t.Logf("%d commits; retries: %d busy, %d deadlocks, %d lock timeouts; %d crash clones",
		commits.Load(), busy.Load(), deadlocks.Load(), timeouts.Load(), len(clones))
	got, err := bankTotal(db.NewIterator(nil))
	if err != nil || got != want {
		t.Fatalf("final total %d, %v; want %d", got, err, want)
	}
	clones = append(clones, mem.CrashClone())
	must(t, tdb.Close())
	for i, fs := range clones {
		o := testOptions(fs)
		o.Logger = discardLogger()
		d, err := Open("/db", o)
		if err != nil {
			t.Fatalf("crash clone %d: %v", i, err)
		}
		got, err := bankTotal(d.NewIterator(nil))
		d.Close()
		if err != nil || got != want {
			t.Fatalf("crash clone %d: total %d, %v; want %d", i, got, err, want)
		}
	}
	// Reopened after Close (unsynced commits included).
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := bankTotal(d.NewIterator(nil)); err != nil || got != want {
		t.Fatalf("after reopen: total %d, %v; want %d", got, err, want)
	}
}

// TestTransactionBankTransferPowerLoss crashes (a crash clone: synced bytes
// only) after every file-system mutation of a run of transfers, optimistic
// and pessimistic in turn, some synced, over small memtables (WAL
// rotations, flushes, compactions): every clone opens with the exact total,
// and holds at least every transfer whose synced commit returned before the
// mutation.
func TestTransactionBankTransferPowerLoss(t *testing.T) {
	const want = bankAccounts * bankInitial
	transfers := 200
	if testing.Short() {
		transfers = 60
	}
	mem := vfs.NewMem()
	type image struct {
		fs    *vfs.MemFS
		acked int // synced commits acknowledged before the mutation
	}
	var mu sync.Mutex
	var images []image
	var acked atomic.Int64
	recording := atomic.Bool{}
	cfs := errorfs.NewCrashPointFS(mem, func(errorfs.Mutation) {
		if recording.Load() {
			mu.Lock()
			images = append(images, image{fs: mem.CrashClone(), acked: int(acked.Load())})
			mu.Unlock()
		}
	})
	opts := testOptions(cfs)
	opts.Logger = discardLogger()
	opts.WriteBufferSize = 4 << 10
	tdb, err := OpenTransactionDB("/db", opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := tdb.NewBatch()
	for i := range bankAccounts {
		b.Put(bankKey(i), []byte(strconv.Itoa(bankInitial)))
	}
	must(t, tdb.Write(b, &WriteOptions{Sync: true}))
	// A counter key written by every synced transfer tells how many of
	// them a crash kept.
	must(t, tdb.Put([]byte("synced-transfers"), []byte("0"), &WriteOptions{Sync: true}))
	rng := rand.New(rand.NewPCG(3, 3))
	recording.Store(true)
	synced := 0
	for i := range transfers {
		wo := &WriteOptions{Sync: rng.IntN(2) == 0}
		var txn *Transaction
		if i%2 == 0 {
			txn = tdb.DB.BeginOptimisticTransaction(wo, nil)
		} else {
			txn = tdb.BeginTransaction(wo, nil)
		}
		a := rng.IntN(bankAccounts)
		c := (a + 1 + rng.IntN(bankAccounts-1)) % bankAccounts
		va, err := txn.GetForUpdate(nil, bankKey(a))
		must(t, err)
		vc, err := txn.GetForUpdate(nil, bankKey(c))
		must(t, err)
		x, _ := strconv.Atoi(string(va))
		y, _ := strconv.Atoi(string(vc))
		amount := rng.IntN(x + 1)
		must(t, txn.Put(bankKey(a), []byte(strconv.Itoa(x-amount))))
		must(t, txn.Put(bankKey(c), []byte(strconv.Itoa(y+amount))))
		if wo.Sync {
			must(t, txn.Put([]byte("synced-transfers"), []byte(strconv.Itoa(synced+1))))
		}
		must(t, txn.Commit())
		if wo.Sync {
			synced++
			acked.Store(int64(synced))
		}
	}
	recording.Store(false)
	must(t, tdb.Close())
	if len(images) == 0 {
		t.Fatal("no mutation was recorded")
	}
	for i, img := range images {
		o := testOptions(img.fs)
		o.Logger = discardLogger()
		d, err := Open("/db", o)
		if err != nil {
			t.Fatalf("crash image %d: %v", i, err)
		}
		got, err := bankTotal(db2Accounts(d))
		if err == nil && got != want {
			err = fmt.Errorf("total %d, want %d", got, want)
		}
		if err == nil {
			v, gerr := d.Get([]byte("synced-transfers"), nil)
			n, _ := strconv.Atoi(string(v))
			if gerr != nil || n < img.acked {
				err = fmt.Errorf("%d synced transfers kept (%v), %d were acknowledged", n, gerr, img.acked)
			}
		}
		d.Close()
		if err != nil {
			t.Fatalf("crash image %d of %d: %v", i, len(images), err)
		}
	}
	t.Logf("%d crash images checked, %d synced transfers", len(images), synced)
}

// db2Accounts is an iterator over the accounts only.
func db2Accounts(d *DB) *Iterator {
	return d.NewIterator(&ReadOptions{LowerBound: []byte("acct"), UpperBound: []byte("acct\xff")})
}
