//go:build race

package routeplan

import "sync/atomic"

// Under the race detector the local loads are counted atomically (counts.go says why not
// otherwise).

func increment(p *int64) { atomic.AddInt64(p, 1) }

func load(p *int64) int64 { return atomic.LoadInt64(p) }
