package monotime

import (
	"slices"
	"testing"
	"time"
)

// TestNowResolvesMicroseconds checks that Now moves within a few
// microseconds of busy work: time.Now's monotonic reading does not on
// Windows (it steps by clock ticks), which made every op shorter than a tick
// measure 0.
func TestNowResolvesMicroseconds(t *testing.T) {
	var steps []time.Duration
	start := Now()
	prev := start
	for len(steps) < 50 && Since(start) < time.Second {
		if now := Now(); now.Sub(prev) > 0 {
			steps = append(steps, now.Sub(prev))
			prev = now
		}
	}
	if len(steps) < 50 {
		t.Fatalf("Now moved %d times in a second, want at least 50", len(steps))
	}
	// The median step: a preemption of the test makes a few long ones.
	slices.Sort(steps)
	if median := steps[len(steps)/2]; median > 20*time.Microsecond {
		t.Fatalf("Now steps by %v (median of %v), want at most 20µs", median, steps)
	}
}

// TestNowFollowsWallClock checks that Now's durations agree with the
// system's: a sleep measured by both differs by less than the coarse
// clock's tick. A preemption between the paired reads skews one attempt, so
// one of five must agree.
func TestNowFollowsWallClock(t *testing.T) {
	var d, sd time.Duration
	for range 5 {
		t0, s0 := Now(), time.Now()
		time.Sleep(50 * time.Millisecond)
		d, sd = Since(t0), time.Since(s0)
		if d >= 45*time.Millisecond && (d-sd).Abs() <= 20*time.Millisecond {
			break
		}
	}
	if d < 45*time.Millisecond || (d-sd).Abs() > 20*time.Millisecond {
		t.Fatalf("Since measured %v across a 50ms sleep, time.Since %v", d, sd)
	}
	if n := Now(); n.Sub(time.Now()).Abs() > time.Second {
		t.Fatalf("Now is %v, time.Now %v", n, time.Now())
	}
}

func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		_ = Now()
	}
}
