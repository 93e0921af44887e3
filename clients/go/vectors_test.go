package routeplan

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The shared vectors (schemas/vectors, written by `routeplan vectors`): Go routes, verifies and
// canonicalises as the Python reference does.

const vectorsDir = "../../schemas/vectors"

type vectorCase struct {
	Name       string   `json:"name"`
	Table      string   `json:"table"`
	Checksum   string   `json:"checksum"`
	Partitions *int     `json:"partitions"`
	Keys       []string `json:"keys"`
	Expected   []string `json:"expected"`
}

func readVectors[T any](t testing.TB, name string) []T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(vectorsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Cases []T }
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Cases
}

var tables sync.Map // file -> *Table: the 2^24 one is read once

func vectorTable(t testing.TB, name string) *Table {
	if table, ok := tables.Load(name); ok {
		return table.(*Table)
	}
	table, err := ReadTableFile(filepath.Join(vectorsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	tables.Store(name, table)
	return table
}

// Lines is what the route tool prints for keys, routed in order by a fresh router.
func Lines(table *Table, keys []string, partitions int) ([]string, error) {
	if table.Kind == PartitionAssignment {
		var out []string
		for _, key := range keys {
			var p int
			if _, err := fmt.Sscan(key, &p); err != nil {
				return nil, err
			}
			out = append(out, table.PartitionConsumer[p])
		}
		return out, nil
	}
	router, err := NewRouter(table, Options{Kafka: partitions > 0})
	if err != nil {
		return nil, err
	}
	if partitions > 0 {
		if err := router.CheckPartitions("t", partitions); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(keys))
	for _, key := range keys {
		if partitions == 0 {
			worker, _ := router.Route(key)
			out = append(out, worker)
			continue
		}
		worker, partition, err := router.RoutePartition(key)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s\t%d", worker, partition))
	}
	return out, nil
}

func TestVectorsRouteEveryMessageAsPythonDoes(t *testing.T) {
	for _, c := range readVectors[vectorCase](t, "cases.json") {
		t.Run(c.Name, func(t *testing.T) {
			table := vectorTable(t, c.Table)
			if table.Checksum != c.Checksum {
				t.Fatalf("checksum %s, vectors say %s", table.Checksum, c.Checksum)
			}
			partitions := 0
			if c.Partitions != nil {
				partitions = *c.Partitions
			}
			got, err := Lines(table, c.Keys, partitions)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.Expected {
				if got[i] != c.Expected[i] {
					t.Fatalf("message %d (key %q): %q, vectors say %q", i, c.Keys[i], got[i], c.Expected[i])
				}
			}
		})
	}
}

// A producer's key is the UTF-8 of its text: the UTF-8 bytes route as the text does; bytes
// of another encoding as the key they are the UTF-8 of, or are refused (and not counted) when
// they are not UTF-8 (key_bytes.json).
func TestVectorsKeyBytesRouteAsTheUTF8OfAKey(t *testing.T) {
	type keyBytesCase struct {
		Name, Table string
		Partitions  int
		Keys        []string
		KeyBytes    []string `json:"key_bytes"`
		ByText      []string `json:"by_text"`
		ByBytes     []string `json:"by_bytes"`
	}
	for _, c := range readVectors[keyBytesCase](t, "key_bytes.json") {
		table := vectorTable(t, c.Table)
		byText, _ := NewRouter(table, Options{Kafka: true})
		byBytes, _ := NewRouter(table, Options{Kafka: true})
		for i, key := range c.Keys {
			_, p, err := byText.RoutePartition(key)
			if got := fmt.Sprint(p); err != nil || got != c.ByText[i] {
				t.Fatalf("%s, message %d (%q): partition %s (%v), vectors say %s", c.Name, i, key, got, err, c.ByText[i])
			}
			raw, err := hex.DecodeString(c.KeyBytes[i])
			if err != nil {
				t.Fatal(err)
			}
			got := "refused"
			if p, err := byBytes.PartitionIn("t", c.Partitions, raw); err == nil {
				got = fmt.Sprint(p)
			} else if !strings.Contains(err.Error(), "not UTF-8") {
				t.Fatal(err)
			}
			if got != c.ByBytes[i] {
				t.Fatalf("%s, message %d (%q as %x): %s, vectors say %s", c.Name, i, key, raw, got, c.ByBytes[i])
			}
		}
	}
}

func TestVectorsCanonicalFormsAreRFC8785(t *testing.T) {
	type canonCase struct{ Name, Input, Canonical string }
	for _, c := range readVectors[canonCase](t, "canonical.json") {
		got, err := Canonical([]byte(c.Input))
		if err != nil || string(got) != c.Canonical {
			t.Errorf("%s: %s (%v), want %s", c.Name, got, err, c.Canonical)
		}
	}
}

func TestVectorsRefusedDocumentsAreRefused(t *testing.T) {
	type refusedCase struct{ Name, File, Why string }
	for _, c := range readVectors[refusedCase](t, "refused.json") {
		if table, err := ReadTableFile(filepath.Join(vectorsDir, c.File)); err == nil {
			t.Errorf("%s (%s): accepted %s v%d", c.Name, c.Why, table.Stream, table.Version)
		} else if !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
}
