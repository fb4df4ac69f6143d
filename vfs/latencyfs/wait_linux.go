package latencyfs

import (
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Go's timers wake a sleeping goroutine through the runtime's epoll wait,
// whose timeout has millisecond resolution: on an idle Linux machine a
// time.Sleep of 100µs or 500µs takes about 1.1ms, which would make the
// latency FS useless for sub-millisecond devices. Sleeping in nanosleep on
// each reader's goroutine is precise but pins one OS thread per sleeper,
// and 64 of them stall each other. So the latency FS waits through one
// waker: a goroutine locked to its own thread, with its timer slack cut to
// 1ns, that sleeps in ppoll until the earliest deadline (or until an
// eventfd says an earlier one arrived) and wakes every reader that is due.
// Measured here: about 10µs late, with 1 or 64 concurrent sleepers
// (BenchmarkLatencyFSSleep).

// latencyWaiter is one goroutine waiting in preciseSleep.
type latencyWaiter struct {
	deadline int64 // nanoseconds on preciseWaker's monotonic clock
	ch       chan struct{}
}

var waiterPool = sync.Pool{New: func() any { return &latencyWaiter{ch: make(chan struct{}, 1)} }}

var preciseWaker struct {
	once  sync.Once
	start time.Time // origin of the monotonic clock
	efd   int       // eventfd that interrupts the waker's ppoll; -1 if unusable
	mu    sync.Mutex
	heap  []*latencyWaiter // min-heap by deadline
	// wakeAt is the deadline the waker sleeps until (1<<62 when it waits
	// for a kick); a waiter due earlier must kick it.
	wakeAt int64
}

func preciseNow() int64 { return int64(time.Since(preciseWaker.start)) }

// defaultSleep is the sleep an FS uses unless a test replaces it.
func defaultSleep(d time.Duration) { preciseSleep(d) }

// preciseSleep blocks the calling goroutine for d, through the waker.
func preciseSleep(d time.Duration) {
	if d <= 0 {
		return
	}
	w := &preciseWaker
	w.once.Do(startPreciseWaker)
	if w.efd < 0 {
		time.Sleep(d)
		return
	}
	lw := waiterPool.Get().(*latencyWaiter)
	lw.deadline = preciseNow() + int64(d)
	w.mu.Lock()
	heapPush(lw)
	kick := lw.deadline < w.wakeAt
	if kick {
		w.wakeAt = lw.deadline
	}
	w.mu.Unlock()
	if kick {
		var one = [8]byte{1}
		_, _ = unix.Write(w.efd, one[:])
	}
	<-lw.ch
	waiterPool.Put(lw)
}

func startPreciseWaker() {
	w := &preciseWaker
	w.start = time.Now()
	w.wakeAt = 1 << 62
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		w.efd = -1
		return
	}
	w.efd = fd
	go runPreciseWaker()
}

func runPreciseWaker() {
	runtime.LockOSThread() // the timer slack below is per thread
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	w := &preciseWaker
	var buf [8]byte
	fds := []unix.PollFd{{Fd: int32(w.efd), Events: unix.POLLIN}}
	for {
		w.mu.Lock()
		now := preciseNow()
		for len(w.heap) > 0 && w.heap[0].deadline <= now {
			heapPop().ch <- struct{}{}
		}
		var timeout *unix.Timespec
		var ts unix.Timespec
		if len(w.heap) > 0 {
			w.wakeAt = w.heap[0].deadline
			ts = unix.NsecToTimespec(w.wakeAt - now)
			timeout = &ts
		} else {
			w.wakeAt = 1 << 62
		}
		w.mu.Unlock()
		n, _ := unix.Ppoll(fds, timeout, nil)
		if n > 0 {
			_, _ = unix.Read(w.efd, buf[:])
		}
	}
}

// heapPush and heapPop keep preciseWaker.heap a min-heap by deadline;
// written out rather than through container/heap to avoid boxing.
func heapPush(x *latencyWaiter) {
	h := append(preciseWaker.heap, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].deadline <= h[i].deadline {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	preciseWaker.heap = h
}

func heapPop() *latencyWaiter {
	h := preciseWaker.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = nil
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].deadline < h[m].deadline {
			m = l
		}
		if r < len(h) && h[r].deadline < h[m].deadline {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	preciseWaker.heap = h
	return top
}
