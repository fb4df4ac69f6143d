// Package monotime reads a monotonic clock fine enough to time one
// operation (a Get, a benchmark's op). time.Now is that clock everywhere
// but on Windows, where Go reads its monotonic time from the interrupt
// time, which moves only at each clock tick (0.5 to 15.6 ms on Windows,
// up to about 2 ms under Wine): an op shorter than a tick measures 0, and
// a benchmark of short ops printed "0 ops/sec". There it counts with
// QueryPerformanceCounter, as RocksDB's Windows Env does.
//
// It never does IO and holds no state but the clock's origin.
package monotime

import "time"

// Since returns the time elapsed since t, a value of Now.
func Since(t time.Time) time.Duration { return Now().Sub(t) }
