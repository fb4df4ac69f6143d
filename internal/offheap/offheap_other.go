//go:build !unix && !windows

package offheap

// mapWords declines: the words come from the Go heap.
func mapWords(int) ([]uint64, bool) { return nil, false }

func unmapWords([]uint64) {}
