//go:build windows

package monotime

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	queryPerformanceCounter = windows.NewLazySystemDLL("kernel32.dll").NewProc("QueryPerformanceCounter")

	// origin is the wall and monotonic time at the counter's originCount;
	// freq is the counter's frequency (fixed at boot). freq is 0 when the
	// counter cannot be read (never since Windows XP): Now is time.Now then.
	origin      time.Time
	originCount int64
	freq        int64
)

func init() {
	var f int64
	proc := windows.NewLazySystemDLL("kernel32.dll").NewProc("QueryPerformanceFrequency")
	if proc.Find() != nil || queryPerformanceCounter.Find() != nil {
		return
	}
	if r, _, _ := syscall.SyscallN(proc.Addr(), uintptr(unsafe.Pointer(&f))); r == 0 || f <= 0 {
		return
	}
	c, ok := counter()
	if !ok {
		return
	}
	origin, originCount, freq = time.Now(), c, f
}

func counter() (int64, bool) {
	var c int64
	r, _, _ := syscall.SyscallN(queryPerformanceCounter.Addr(), uintptr(unsafe.Pointer(&c)))
	return c, r != 0
}

// Now returns the current time, with a monotonic reading that Sub and Since
// measure durations with: the time of the package's start plus the
// performance counter's time since, to the counter's resolution (100 ns or
// finer). Only its differences are exact; as a wall time it drifts from
// the system clock as the counter does.
func Now() time.Time {
	if freq == 0 {
		return time.Now()
	}
	c, ok := counter()
	if !ok {
		return time.Now()
	}
	n := c - originCount
	// n*1e9 would overflow after 15 minutes at a 10 MHz counter: whole
	// seconds and the rest are converted apart.
	d := time.Duration(n/freq)*time.Second + time.Duration(n%freq*int64(time.Second)/freq)
	return origin.Add(d)
}
