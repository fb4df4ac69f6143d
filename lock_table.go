package shale

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// lockTable holds the row locks of a TransactionDB: exclusive locks keyed
// by user key, in stripes that each have a mutex and a map, and the
// waits-for edges that deadlock detection follows.
type lockTable struct {
	seed    maphash.Seed
	stripes []lockStripe
	// waitMu guards waits. It is taken before a stripe's mutex, never
	// after.
	waitMu sync.Mutex
	// waits maps a waiting owner to the lock it waits for.
	waits map[uint64]waitEdge
}

type lockStripe struct {
	mu    sync.Mutex
	locks map[string]*rowLock
}

// rowLock is one held lock; released is closed when it is let go.
type rowLock struct {
	owner    uint64
	released chan struct{}
}

// waitEdge says its owner waits for key, held by holder.
type waitEdge struct {
	holder uint64
	key    string
}

func newLockTable(stripes int) *lockTable {
	lt := &lockTable{seed: maphash.MakeSeed(), stripes: make([]lockStripe, stripes), waits: make(map[uint64]waitEdge)}
	for i := range lt.stripes {
		lt.stripes[i].locks = make(map[string]*rowLock)
	}
	return lt
}

func (lt *lockTable) stripe(key string) *lockStripe {
	return &lt.stripes[maphash.String(lt.seed, key)%uint64(len(lt.stripes))]
}

// holder returns the owner of key's lock, 0 when free.
func (lt *lockTable) holder(key string) uint64 {
	s := lt.stripe(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.locks[key]; l != nil {
		return l.owner
	}
	return 0
}

// lock takes key's lock for owner, waiting up to timeout (negative:
// forever; LockNoWait: not at all) for its holder to let it go. With
// detect, a wait that would close a cycle of waiters (followed for at
// most depth edges) fails with ErrDeadlock instead. Taking a lock owner
// holds succeeds at once.
func (lt *lockTable) lock(owner uint64, key string, timeout time.Duration, detect bool, depth int) error {
	var deadline time.Time
	var timer *time.Timer
	if timeout > 0 && timeout != LockNoWait {
		deadline = time.Now().Add(timeout)
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	s := lt.stripe(key)
	waiting := false
	defer func() {
		if waiting {
			lt.waitMu.Lock()
			delete(lt.waits, owner)
			lt.waitMu.Unlock()
		}
	}()
	for {
		s.mu.Lock()
		l := s.locks[key]
		if l == nil {
			s.locks[key] = &rowLock{owner: owner, released: make(chan struct{})}
			s.mu.Unlock()
			return nil
		}
		if l.owner == owner {
			s.mu.Unlock()
			return nil
		}
		holder, released := l.owner, l.released
		s.mu.Unlock()
		if timeout == LockNoWait {
			return lockTimeoutError(key, timeout)
		}
		// Record the wait, and look for a cycle through it, atomically:
		// of two owners that start waiting for each other, the second to
		// get here sees the first one's edge.
		lt.waitMu.Lock()
		if lt.holder(key) != holder {
			// Let go meanwhile: the holder may now wait for owner without
			// owner waiting for it.
			lt.waitMu.Unlock()
			continue
		}
		if detect && lt.closesCycleLocked(owner, holder, depth) {
			lt.waitMu.Unlock()
			return deadlockError(key)
		}
		lt.waits[owner] = waitEdge{holder: holder, key: key}
		waiting = true
		lt.waitMu.Unlock()
		if deadline.IsZero() {
			<-released
			continue
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return lockTimeoutError(key, timeout)
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-released:
			// (Go 1.23 timers: Stop and Reset leave no stale tick to drain;
			// draining after a Stop that lost the race would block.)
			timer.Stop()
		case <-timer.C:
			return lockTimeoutError(key, timeout)
		}
	}
}

// closesCycleLocked reports whether owner waiting for holder closes a cycle:
// following the waits-for edges from holder leads back to owner. An edge
// counts only while its key is still held by the holder it names (a
// waiter woken by a release may not have removed its edge yet). waitMu is
// held.
func (lt *lockTable) closesCycleLocked(owner, holder uint64, depth int) bool {
	cur := holder
	for range depth {
		if cur == owner {
			return true
		}
		e, ok := lt.waits[cur]
		if !ok || lt.holder(e.key) != e.holder {
			return false
		}
		cur = e.holder
	}
	return false
}

// unlock lets go of owner's locks of keys.
func (lt *lockTable) unlock(owner uint64, keys []string) {
	for _, k := range keys {
		lt.unlockOne(owner, k)
	}
}

// unlockAll lets go of owner's locks of the keys of tracked.
func (lt *lockTable) unlockAll(owner uint64, tracked map[string]base.SeqNum) {
	for k := range tracked {
		lt.unlockOne(owner, k)
	}
}

func (lt *lockTable) unlockOne(owner uint64, key string) {
	s := lt.stripe(key)
	s.mu.Lock()
	if l := s.locks[key]; l != nil && l.owner == owner {
		delete(s.locks, key)
		close(l.released)
	}
	s.mu.Unlock()
}
