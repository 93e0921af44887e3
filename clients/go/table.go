package routeplan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

const (
	// KeyRouting and PartitionAssignment are the two kinds of table.
	KeyRouting          = "key_routing"
	PartitionAssignment = "partition_assignment"
	// MaxBytes is the largest document a reader accepts.
	MaxBytes = 256 << 20
	// MaxKeyGroups is the most key groups a table may have.
	MaxKeyGroups = 1 << 24

	checksumPrefix       = "jcs-sha256:"
	legacyChecksumPrefix = "sha256:"
)

// Table is one verified routing-table document of either kind (docs/routing-spec.md).
type Table struct {
	Stream   string
	Version  int64
	Kind     string
	Checksum string

	// key_routing
	Seed           uint32
	Workers        []Worker
	KeyGroupWorker []int32             // key group -> index in Workers
	HotKeys        map[string][]Target // split key -> its workers by weight, descending (stable)

	// partition_assignment
	Consumers         []Worker
	PartitionConsumer map[int]string
}

// Worker is a worker (or consumer) of a table.
type Worker struct {
	Name     string
	Capacity float64
}

// Target is one worker of a split key.
type Target struct {
	Worker int32 // index in Workers
	Weight float64
}

// NumKeyGroups is the number of key groups of a key_routing table.
func (t *Table) NumKeyGroups() int { return len(t.KeyGroupWorker) }

// VerifyChecksum returns the document's checksum when it is its own, by the scheme its prefix
// names: "jcs-sha256:" (RFC 8785) or "sha256:" (documents published before: Python's spelling).
func VerifyChecksum(data []byte) (string, error) {
	sum, _, err := verifyChecksum(data)
	return sum, err
}

func verifyChecksum(data []byte) (string, *captured, error) {
	canonical, got, err := canonicalize(data, false, []string{"checksum"})
	if err != nil {
		return "", nil, err
	}
	if got.checksum == nil {
		return "", nil, errNoChecksum
	}
	stated, prefix := *got.checksum, checksumPrefix
	switch {
	case strings.HasPrefix(stated, checksumPrefix):
	case strings.HasPrefix(stated, legacyChecksumPrefix):
		prefix = legacyChecksumPrefix
		if canonical, err = legacyCanonical(data, "checksum"); err != nil {
			return "", nil, err
		}
	default:
		return "", nil, fmt.Errorf("unknown checksum scheme in %q", stated)
	}
	sum := sha256.Sum256(canonical)
	if expected := prefix + hex.EncodeToString(sum[:]); stated != expected {
		return "", nil, fmt.Errorf("checksum mismatch (%s != %s)", stated, expected)
	}
	return stated, got, nil
}

type workerDoc struct {
	Worker   *string      `json:"worker"`
	Capacity *json.Number `json:"capacity"`
	State    *string      `json:"state"`
}

type document struct {
	Stream  *string     `json:"stream"`
	Version json.Number `json:"version"`
	Kind    *string     `json:"kind"`
	Hash    *struct {
		Function *string     `json:"function"`
		Seed     json.Number `json:"seed"`
	} `json:"hash"`
	NumKeyGroups   json.Number     `json:"num_key_groups"`
	Workers        []workerDoc     `json:"workers"`
	Consumers      []workerDoc     `json:"consumers"`
	KeyGroupWorker json.RawMessage `json:"key_group_worker"`
	HotKeys        []struct {
		Key     *string `json:"key"`
		Workers []struct {
			Worker *string      `json:"worker"`
			Weight *json.Number `json:"weight"`
		} `json:"workers"`
	} `json:"hot_keys"`
	PartitionConsumer map[string]string `json:"partition_consumer"`
}

// ParseTable verifies a document (bounds, checksum, the fields routing needs) and returns its
// table; an error says why it is refused.
func ParseTable(data []byte) (*Table, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("more than %d bytes", MaxBytes)
	}
	sum, got, err := verifyChecksum(data)
	if err != nil {
		return nil, err
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("bad field: %v", err)
	}
	if doc.Stream == nil || doc.Kind == nil {
		return nil, errors.New("missing field stream or kind")
	}
	t := &Table{Stream: *doc.Stream, Kind: *doc.Kind, Checksum: sum}
	if v, ok := integer(doc.Version); ok {
		t.Version = int64(v)
	}
	switch t.Kind {
	case KeyRouting:
		return t, parseKeyRouting(t, &doc, got)
	case PartitionAssignment:
		return t, parseAssignment(t, &doc)
	}
	return nil, fmt.Errorf("kind must be key_routing or partition_assignment, got %q", t.Kind)
}

func integer(n json.Number) (float64, bool) {
	x, err := strconv.ParseFloat(string(n), 64)
	return x, err == nil && x == math.Trunc(x)
}

func parseWorkers(docs []workerDoc, what string) ([]Worker, map[string]int32, error) {
	if len(docs) == 0 {
		return nil, nil, fmt.Errorf("%s: at least one is needed", what)
	}
	workers := make([]Worker, len(docs))
	index := make(map[string]int32, len(docs))
	active := false
	for i, w := range docs {
		if w.Worker == nil || *w.Worker == "" {
			return nil, nil, fmt.Errorf("%s[%d]: no name", what, i)
		}
		name := *w.Worker
		if _, dup := index[name]; dup {
			return nil, nil, fmt.Errorf("%s: %q listed twice", what, name)
		}
		capacity := 1.0
		if w.Capacity != nil {
			x, err := strconv.ParseFloat(string(*w.Capacity), 64)
			if err != nil || !(x > 0) || math.IsInf(x, 0) {
				return nil, nil, fmt.Errorf("%s %q: capacity must be > 0, got %s", what, name, *w.Capacity)
			}
			capacity = x
		}
		state := "active"
		if w.State != nil {
			state = *w.State
		}
		if state != "active" && state != "draining" {
			return nil, nil, fmt.Errorf("%s %q: state must be active or draining, got %q", what, name, state)
		}
		active = active || state == "active"
		index[name] = int32(i)
		workers[i] = Worker{Name: name, Capacity: capacity}
	}
	if !active {
		return nil, nil, fmt.Errorf("%s: at least one must be active", what)
	}
	return workers, index, nil
}

func parseKeyRouting(t *Table, doc *document, got *captured) error {
	if doc.Hash == nil || doc.Hash.Function == nil || *doc.Hash.Function != "murmur3_x86_32" {
		return errors.New("hash.function must be murmur3_x86_32")
	}
	seed, ok := integer(doc.Hash.Seed)
	if !ok || seed < 0 || seed >= 1<<32 {
		return fmt.Errorf("hash.seed must be an integer in [0, 2^32), got %s", doc.Hash.Seed)
	}
	t.Seed = uint32(seed)
	n, ok := integer(doc.NumKeyGroups)
	if !ok || n < 1 || n > MaxKeyGroups {
		return fmt.Errorf("num_key_groups must be in [1, 2^24], got %s", doc.NumKeyGroups)
	}
	names, groups := got.groupNames, got.groups
	if !got.groupsOK { // names with escapes: decode the array
		var list []string
		if err := json.Unmarshal(doc.KeyGroupWorker, &list); err != nil {
			return fmt.Errorf("key_group_worker: %v", err)
		}
		names, groups = nil, make([]int32, len(list))
		seen := map[string]int32{}
		for g, name := range list {
			i, ok := seen[name]
			if !ok {
				i = int32(len(names))
				seen[name] = i
				names = append(names, name)
			}
			groups[g] = i
		}
	}
	if len(groups) != int(n) {
		return errors.New("key_group_worker must have num_key_groups entries")
	}
	if len(doc.PartitionConsumer) > 0 || doc.Consumers != nil {
		return errors.New("partition_consumer and consumers belong to partition_assignment tables")
	}
	workers, index, err := parseWorkers(doc.Workers, "workers")
	if err != nil {
		return err
	}
	t.Workers = workers
	worker := make([]int32, len(names))
	for i, name := range names {
		w, ok := index[name]
		if !ok {
			return fmt.Errorf("key_group_worker: worker %q is not in workers", name)
		}
		worker[i] = w
	}
	t.KeyGroupWorker = make([]int32, len(groups))
	for g, i := range groups {
		t.KeyGroupWorker[g] = worker[i]
	}
	t.HotKeys = make(map[string][]Target, len(doc.HotKeys))
	for _, h := range doc.HotKeys {
		if h.Key == nil {
			return errors.New("hot_keys: an entry has no key")
		}
		if _, dup := t.HotKeys[*h.Key]; dup {
			return fmt.Errorf("hot_keys: %q listed twice", *h.Key)
		}
		if len(h.Workers) == 0 {
			return fmt.Errorf("hot key %q has no workers", *h.Key)
		}
		targets := make([]Target, 0, len(h.Workers))
		for _, w := range h.Workers {
			if w.Worker == nil || w.Weight == nil {
				return fmt.Errorf("hot key %q: a worker without name or weight", *h.Key)
			}
			i, ok := index[*w.Worker]
			if !ok {
				return fmt.Errorf("hot key %q: worker %q is not in workers", *h.Key, *w.Worker)
			}
			weight, err := strconv.ParseFloat(string(*w.Weight), 64)
			if err != nil || !(weight > 0) {
				return fmt.Errorf("hot key %q: weights must be > 0, got %s", *h.Key, *w.Weight)
			}
			targets = append(targets, Target{Worker: i, Weight: weight})
		}
		stableByWeight(targets)
		t.HotKeys[*h.Key] = targets
	}
	return nil
}

// stableByWeight sorts targets by weight, descending; equal weights keep their order.
func stableByWeight(targets []Target) {
	for i := 1; i < len(targets); i++ { // insertion sort: stable, and lists are short
		for j := i; j > 0 && targets[j].Weight > targets[j-1].Weight; j-- {
			targets[j], targets[j-1] = targets[j-1], targets[j]
		}
	}
}

func parseAssignment(t *Table, doc *document) error {
	consumers := doc.Consumers
	if consumers == nil { // documents published before: the consumers as workers
		n, _ := integer(doc.NumKeyGroups)
		if n != 0 || (len(doc.KeyGroupWorker) > 0 && string(doc.KeyGroupWorker) != "[]") || len(doc.HotKeys) > 0 {
			return errors.New("a partition_assignment table has no key groups or hot keys")
		}
		consumers = doc.Workers
	}
	workers, index, err := parseWorkers(consumers, "consumers")
	if err != nil {
		return err
	}
	if len(doc.PartitionConsumer) == 0 {
		return errors.New("partition_consumer: at least one partition is needed")
	}
	t.Consumers = workers
	t.PartitionConsumer = make(map[int]string, len(doc.PartitionConsumer))
	for p, consumer := range doc.PartitionConsumer {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || strings.TrimLeft(p, "0123456789") != "" {
			return fmt.Errorf("partition_consumer: %q is not a partition number", p)
		}
		if _, ok := index[consumer]; !ok {
			return fmt.Errorf("partition %d: consumer %q is not in consumers", n, consumer)
		}
		t.PartitionConsumer[n] = consumer
	}
	return nil
}

// ReadTableFile reads and verifies the document in the file at path (gunzipped when the name
// ends with .gz).
func ReadTableFile(path string) (*Table, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	t, err := ParseTable(data)
	if err != nil {
		return nil, fmt.Errorf("%s: refused: %v", path, err)
	}
	return t, nil
}
