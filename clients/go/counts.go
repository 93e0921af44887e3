package routeplan

import "sync/atomic"

// counter is one worker's local load: an atomic count, so that concurrent calls lose no
// increment (and the race detector tests the code that ships), on a cache line of its own, so
// that goroutines counting different workers do not contend for one line.
type counter struct {
	n atomic.Int64
	_ [cacheLine - 8]byte
}

const cacheLine = 64
