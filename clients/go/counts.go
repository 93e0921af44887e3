//go:build !race

package routeplan

// The local loads are plain counters: a lock-prefixed atomic add would cost about as much as
// the hash itself. Under concurrent calls an increment may be lost (the local load is an
// estimate either way); builds with the race detector count atomically (counts_race.go).

func increment(p *int64) { *p++ }

func load(p *int64) int64 { return *p }
