// Package routeplan routes keys as a published routeplan routing table says
// (docs/routing-spec.md in the routeplan repository).
//
//	router, err := routeplan.Open("http://routeplan:8080", "clicks", routeplan.Options{
//		ReloadInterval: 30 * time.Second, Token: apiToken})
//	worker, err := router.Route("user-42") // "w7"
//	partition, err := router.Partition([]byte("user-42")) // 7
//	defer router.Close()
//
// A source is a table file (.json or .json.gz), a routing store directory
// (<dir>/<stream>/LATEST naming v<N>.json, as routeplan publishes it), or the routing-table
// HTTP API (http(s)://base: GET base/streams/<stream>/latest with If-None-Match). A reload that
// fails (unreachable, not JSON, wrong checksum, wrong kind, a worker without a partition) is
// logged once and the last good table keeps serving.
//
// The local loads (the messages this router has routed to each worker, which decide a split
// key's worker) are counted per installed version: they start at 0 when a new version is
// installed, and a router whose table has no split keys does not keep them
// (docs/routing-spec.md §3).
package routeplan

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Options configure Open.
type Options struct {
	// ReloadInterval > 0 polls the source in a goroutine; 0 loads once.
	ReloadInterval time.Duration
	// Token is sent as "Authorization: Bearer <Token>" to an HTTP source.
	Token string
	// Timeout bounds each HTTP request (default 10 s).
	Timeout time.Duration
	// WorkerPartition maps workers to Kafka partitions; a worker it does not name is the integer
	// its name ends with.
	WorkerPartition map[string]int32
	// Kafka refuses a table (keeping the last good one) unless each of its workers has a
	// partition of its own: set it when the router serves a producer.
	Kafka bool
	// Logger receives the reload messages (default slog.Default()).
	Logger *slog.Logger
}

// Router routes keys by the last good key_routing table of a source.
type Router struct {
	snap atomic.Pointer[snapshot]
	mu   sync.Mutex // installs; Route never takes it
	poll sync.Mutex // one Reload at a time

	opts     Options
	src      source
	tag      string
	log      *slog.Logger
	rejected string // the version last logged as refused
	down     bool   // an outage has been logged
	stop     chan struct{}
	done     chan struct{}
}

type split struct {
	slots      []int32
	capacities []float64
}

// snapshot is one table compiled for routing, with its own local loads; swapped whole. A slot
// is a worker's index in the table's Workers.
type snapshot struct {
	table     *Table
	seed      uint32
	n         uint32
	m         uint64  // Lemire's fastmod multiplier for n: ceil(2^64 / n)
	groupSlot []int32 // key group -> slot; ^slot when a split key hashes to this group
	hot       map[string]split
	names     []string  // slot -> worker
	counts    []counter // slot -> messages routed under this version; nil without split keys
	partition []int32   // slot -> Kafka partition, -1: none
	widest    int32     // the slot of the largest partition: a topic needs partition[widest]+1
	noPart    string    // why a worker has no partition
}

// NewRouter routes by table alone (no source, no reload).
func NewRouter(table *Table, opts Options) (*Router, error) {
	r := &Router{opts: opts, log: opts.Logger}
	if r.log == nil {
		r.log = slog.Default()
	}
	if err := r.install(table); err != nil {
		return nil, err
	}
	return r, nil
}

// Open loads the table of stream from location and, with opts.ReloadInterval, keeps following
// it. It fails when the first load fails.
func Open(location, stream string, opts Options) (*Router, error) {
	src, err := newSource(location, stream, opts)
	if err != nil {
		return nil, err
	}
	fetched, err := src.fetch("")
	if err != nil {
		return nil, err
	}
	table, err := fetched.table()
	if err != nil {
		return nil, err
	}
	r, err := NewRouter(table, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fetched.where, err)
	}
	r.src, r.tag = src, fetched.tag
	if opts.ReloadInterval > 0 {
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.follow(opts.ReloadInterval)
	}
	return r, nil
}

var trailingInt = regexp.MustCompile(`[0-9]+$`)

// install compiles t and swaps it in with local loads at 0. The version now serving read again
// (same version and checksum: an unchanged document under a new tag) changes nothing, so its
// counts keep going.
func (r *Router) install(t *Table) error {
	if t.Kind != KeyRouting {
		return fmt.Errorf("%s v%d is a %s table, not a key_routing one", t.Stream, t.Version, t.Kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.snap.Load(); old != nil && old.table.Version == t.Version &&
		old.table.Checksum == t.Checksum {
		return nil
	}
	s := &snapshot{table: t, seed: t.Seed, n: uint32(len(t.KeyGroupWorker)), hot: map[string]split{}}
	s.m = ^uint64(0)/uint64(s.n) + 1
	s.names = make([]string, len(t.Workers))
	for i, w := range t.Workers {
		s.names[i] = w.Name
	}
	if len(t.HotKeys) > 0 { // no decision reads the counts of a table without split keys
		s.counts = make([]counter, len(t.Workers))
	}
	s.groupSlot = append([]int32(nil), t.KeyGroupWorker...)
	for key, targets := range t.HotKeys {
		sp := split{}
		for _, target := range targets {
			sp.slots = append(sp.slots, target.Worker)
			sp.capacities = append(sp.capacities, t.Workers[target.Worker].Capacity)
		}
		s.hot[key] = sp
		if g := Murmur3(key, s.seed) % s.n; s.groupSlot[g] >= 0 {
			s.groupSlot[g] = ^s.groupSlot[g] // look the key up in hot only in such groups
		}
	}
	s.partition = make([]int32, len(s.names))
	owner := map[int32]string{}
	for i, name := range s.names {
		s.partition[i] = -1
		if p, ok := r.opts.WorkerPartition[name]; ok {
			s.partition[i] = p
		} else if m := trailingInt.FindString(name); m != "" {
			if p, err := strconv.ParseInt(m, 10, 32); err == nil {
				s.partition[i] = int32(p)
			}
		}
		if s.partition[i] > s.partition[s.widest] {
			s.widest = int32(i)
		}
		if s.noPart != "" {
			continue
		}
		if p := s.partition[i]; p < 0 {
			s.noPart = fmt.Sprintf("worker %q has no trailing integer to use as its partition", name)
		} else if other, dup := owner[p]; dup {
			s.noPart = fmt.Sprintf("workers %q and %q both map to partition %d", other, name, p)
		} else {
			owner[p] = name
		}
	}
	if r.opts.Kafka && s.noPart != "" {
		return errors.New(s.noPart)
	}
	r.snap.Store(s)
	return nil
}

// Table is the table now serving.
func (r *Router) Table() *Table { return r.snap.Load().table }

// Route is the worker of the next message of key (docs/routing-spec.md §3): its key group's,
// or for a split key the candidate this router has sent least to (under this version) relative
// to its capacity. It never blocks and allocates nothing. Concurrent calls are safe: each
// message is counted once, atomically (counts.go). key is the key's text, hashed as its bytes
// (a Go string holding UTF-8; Route does not check it, Partition checks the bytes it is given).
func (r *Router) Route(key string) (string, error) {
	s := r.snap.Load()
	return s.names[s.route(key)], nil
}

func (s *snapshot) route(key string) int32 { return routeKey(s, key) }

// routeKey is the worker of the next message of key, the message counted (under a table with
// split keys: no decision reads the counts of one without).
func routeKey[T ~string | ~[]byte](s *snapshot, key T) int32 {
	slot := s.groupSlot[group(Murmur3(key, s.seed), s.m, s.n)]
	if slot < 0 { // a split key hashes to this group: is it one?
		if sp, ok := s.hot[string(key)]; ok { // no allocation for a map lookup
			slot = s.leastLoaded(sp)
		} else {
			slot = ^slot
		}
	}
	if s.counts != nil {
		s.counts[slot].n.Add(1)
	}
	return slot
}

// group is hash mod n as Lemire's fastmod computes it (a multiplication instead of a division;
// exact for every 32-bit hash, m = ceil(2^64 / n)).
func group(hash uint32, m uint64, n uint32) uint32 {
	hi, _ := bits.Mul64(m*uint64(hash), uint64(n))
	return uint32(hi)
}

// leastLoaded is the split key's candidate with the smallest local load relative to its
// capacity, the first one on ties.
func (s *snapshot) leastLoaded(sp split) int32 {
	best := sp.slots[0]
	bestLoad := float64(s.counts[best].n.Load()) / sp.capacities[0]
	for i := 1; i < len(sp.slots); i++ {
		load := float64(s.counts[sp.slots[i]].n.Load()) / sp.capacities[i]
		if load < bestLoad {
			best, bestLoad = sp.slots[i], load
		}
	}
	return best
}

// Partition is the Kafka partition of the next message of key (its worker's, docs/routing-spec.md
// §4), key being the UTF-8 bytes of the key's text (§3). A nil key is an error (a routed topic
// has no place for a record without a key), and so is a key that is not UTF-8, as in the Python
// and Java clients; a message refused is not counted.
func (r *Router) Partition(key []byte) (int32, error) {
	return r.PartitionIn("", 0, key)
}

// PartitionIn is Partition for a topic with the given number of partitions (0: not checked):
// while the topic has fewer partitions than the table needs (CheckPartitions), every message
// is an error, refused before it is routed (a local load counts the messages routed).
func (r *Router) PartitionIn(topic string, partitions int, key []byte) (int32, error) {
	if key == nil {
		return -1, errors.New("routeplan: the record has no key (a routed topic needs one)")
	}
	s := r.snap.Load()
	if s.noPart != "" {
		return -1, errors.New("routeplan: " + s.noPart)
	}
	if !utf8.Valid(key) {
		return -1, fmt.Errorf("routeplan: the record's key %q is not UTF-8 text (a key is routed "+
			"by the UTF-8 bytes of its text)", truncate(key))
	}
	if partitions > 0 && partitions <= int(s.partition[s.widest]) {
		return -1, s.tooFewPartitions(topic, partitions)
	}
	return s.partition[routeKey(s, key)], nil
}

// truncate is a key's first 40 bytes, for a message.
func truncate(key []byte) []byte { return key[:min(len(key), 40)] }

// RoutePartition routes the next message of key: its worker and its Kafka partition.
func (r *Router) RoutePartition(key string) (string, int32, error) {
	s := r.snap.Load()
	if s.noPart != "" {
		return "", -1, errors.New("routeplan: " + s.noPart)
	}
	slot := s.route(key)
	return s.names[slot], s.partition[slot], nil
}

// CheckPartitions returns an error when a topic with n partitions lacks one the table needs.
func (r *Router) CheckPartitions(topic string, n int) error {
	s := r.snap.Load()
	if s.noPart != "" {
		return errors.New("routeplan: " + s.noPart)
	}
	if n <= int(s.partition[s.widest]) {
		return s.tooFewPartitions(topic, n)
	}
	return nil
}

func (s *snapshot) tooFewPartitions(topic string, n int) error {
	return fmt.Errorf("routeplan: worker %q maps to partition %d, which topic %q does not have "+
		"(partitions 0-%d; table %s v%d)", s.names[s.widest], s.partition[s.widest], topic, n-1,
		s.table.Stream, s.table.Version)
}

// LocalLoads is the number of messages this router has routed to each worker of the table in
// force since that version was installed; empty under a table without split keys (no decision
// reads them, so none are kept).
func (r *Router) LocalLoads() map[string]int64 {
	s := r.snap.Load()
	loads := make(map[string]int64, len(s.counts))
	for i, name := range s.names[:len(s.counts)] {
		loads[name] = s.counts[i].n.Load()
	}
	return loads
}
