//go:build race

package shale

// raceEnabled says the tests run under the race detector, where sync.Pool
// drops items at random and allocation counts say nothing about the code.
const raceEnabled = true
