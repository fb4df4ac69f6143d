//go:build !windows

package monotime

import "time"

// Now returns the current time, with a monotonic reading that Sub and Since
// measure durations with: time.Now.
func Now() time.Time { return time.Now() }
