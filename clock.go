package shale

import "time"

// Clock tells the DB the time (RocksDB's SystemClock, Env::NowMicros). The
// DB reads it to date tombstones as they are written and to wake up when a
// delete persistence deadline (Options.DeletePersistenceThreshold) comes,
// to date tables and memtables for TTL and periodic compactions (and check
// them at each pick) and snapshots, and for blob GC's off-peak window. Tests
// pass a clock they move by hand.
// Implementations must be safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed on this
	// clock (at once when d <= 0), unless the returned timer is stopped
	// first, as time.AfterFunc.
	AfterFunc(d time.Duration, f func()) ClockTimer
}

// ClockTimer is a pending call of Clock.AfterFunc.
type ClockTimer interface {
	// Stop prevents the call and reports whether it did: false when the
	// call has started (or was stopped before), as time.Timer's Stop.
	Stop() bool
}

// SystemClock is the operating system's clock (time.Now and
// time.AfterFunc), the default Options.Clock.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) ClockTimer { return time.AfterFunc(d, f) }
