package routeplan

import (
	"fmt"
	"testing"
)

// Route of a plain key costs about one Murmur3 call and allocates nothing (README, Performance).

func benchKeys() []string {
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%d", i*7919%100000)
	}
	return keys
}

func benchRouter(b testing.TB) *Router {
	router, err := NewRouter(vectorTable(b, "tables/kr-seedmax.json"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	return router
}

func BenchmarkMurmur3(b *testing.B) {
	keys := benchKeys()
	var sink uint32
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sink += Murmur3(keys[i&4095], 42)
	}
	_ = sink
}

func BenchmarkRoute(b *testing.B) {
	router, keys := benchRouter(b), benchKeys()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		router.Route(keys[i&4095])
	}
}

func BenchmarkRouteSplitKey(b *testing.B) {
	router := benchRouter(b)
	b.ReportAllocs()
	for b.Loop() {
		router.Route("hot-8") // split over 8 workers
	}
}

func BenchmarkPartitionBytes(b *testing.B) {
	router, keys := benchRouter(b), benchKeys()
	raw := make([][]byte, len(keys))
	for i, k := range keys {
		raw[i] = []byte(k)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		router.Partition(raw[i&4095])
	}
}

// Goroutines routing through one router: plain keys count different workers (each counter on a
// cache line of its own: 18 ns/op on 2 cores, 36 ns/op with the counters side by side); one
// split key's goroutines read and count the same few counters.

func BenchmarkRouteParallel(b *testing.B) {
	router, keys := benchRouter(b), benchKeys()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			router.Route(keys[i&4095])
		}
	})
}

func BenchmarkRouteSplitKeyParallel(b *testing.B) {
	router := benchRouter(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			router.Route("hot-8")
		}
	})
}

func TestRouteAllocatesNothing(t *testing.T) {
	router, keys := benchRouter(t), benchKeys()
	raw := []byte("user-12345")
	for name, f := range map[string]func(){
		"plain":     func() { router.Route(keys[7]) },
		"split":     func() { router.Route("hot-8") },
		"partition": func() { router.Partition(raw) },
	} {
		if allocs := testing.AllocsPerRun(1000, f); allocs != 0 {
			t.Errorf("%s: %v allocations per call", name, allocs)
		}
	}
}

func TestTheKeyGroupIsTheHashModuloTheGroupCount(t *testing.T) {
	for _, n := range []uint32{1, 2, 3, 7, 1000, 1024, 4096, 65537, 1 << 23, 1<<24 - 1, 1 << 24} {
		m := ^uint64(0)/uint64(n) + 1
		x := uint32(12345)
		for i := 0; i < 20000; i++ {
			x = x*1664525 + 1013904223
			for _, h := range []uint32{x, 0, 1, ^uint32(0), 1 << 31, n, -n} {
				if got := group(h, m, n); got != h%n {
					t.Fatalf("group(%d) mod %d = %d, want %d", h, n, got, h%n)
				}
			}
		}
	}
}
