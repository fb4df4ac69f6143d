//go:build !linux

package latencyfs

import "time"

// defaultSleep is the sleep an FS uses unless a test replaces it;
// outside Linux it is the runtime's timer (whose resolution is about a
// millisecond on Windows).
func defaultSleep(d time.Duration) { time.Sleep(d) }
