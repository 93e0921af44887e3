package routeplan

import (
	"bytes"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func vectorBytes(t *testing.T, name string) []byte {
	data, err := os.ReadFile(filepath.Join(vectorsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func publish(t *testing.T, dir string, version string, body []byte) {
	if err := os.WriteFile(filepath.Join(dir, version), body, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "LATEST"), []byte(version), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReloadKeepsTheLastGoodTableOnEveryBadVersion(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "vectors")
	os.Mkdir(dir, 0o755)
	good := vectorBytes(t, "tables/kr-seed42.json")
	publish(t, dir, "v1.json", good)
	var logs bytes.Buffer
	router, err := Open(root, "vectors", Options{Kafka: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	before, _, _ := router.RoutePartition("user-1")
	for version, body := range map[string][]byte{
		"v2.json": vectorBytes(t, "refused/bad-checksum.json"),
		"v3.json": good[:len(good)/2],
		"v4.json": vectorBytes(t, "tables/pa-basic.json"), // the wrong kind
		"v5.json": bytes.ReplaceAll(vectorBytes(t, "tables/kr-basic.json"), []byte(`"w1"`), []byte(`"wx"`)),
	} {
		publish(t, dir, version, body)
		if router.Reload() {
			t.Fatalf("%s was installed", version)
		}
		if router.Table().Version != 1 || !strings.Contains(logs.String(), "rejected="+version) {
			t.Fatalf("%s: serving v%d, logs %s", version, router.Table().Version, logs.String())
		}
	}
	os.WriteFile(filepath.Join(dir, "LATEST"), []byte("garbage"), 0o644)
	if router.Reload() || !strings.Contains(logs.String(), "names no version file") {
		t.Fatal(logs.String())
	}
	os.Remove(filepath.Join(dir, "LATEST"))
	if router.Reload() || !strings.Contains(logs.String(), "source unavailable") {
		t.Fatal(logs.String())
	}
	after, _, _ := router.RoutePartition("user-1")
	if after != before {
		t.Fatalf("routes changed: %s -> %s", before, after)
	}
	publish(t, dir, "v6.json", vectorBytes(t, "tables/kr-legacy.json"))
	if !router.Reload() || router.Table().Version != 2 { // kr-legacy is version 2
		t.Fatalf("the good v6 was not installed: %s", logs.String())
	}
}

func TestHTTPSourceSendsTheTokenAndFollowsETags(t *testing.T) {
	body := vectorBytes(t, "tables/kr-seed42.json")
	var requests, notModified atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/api/streams/vectors/latest" || r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, `{"detail": "no"}`, http.StatusUnauthorized)
			return
		}
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Write(body)
	}))
	defer server.Close()
	if _, err := Open(server.URL+"/api", "vectors", Options{Token: "wrong"}); err == nil ||
		!strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("a refused request: %v", err)
	}
	router, err := Open(server.URL+"/api/", "vectors", Options{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if router.Reload() || notModified.Load() != 1 || router.Table().Stream != "vectors" {
		t.Fatalf("requests %d, 304s %d", requests.Load(), notModified.Load())
	}
	if _, err := Open(server.URL, "../etc", Options{}); err == nil {
		t.Fatal("a stream name that breaks the name rule was accepted")
	}
}

func TestPartitionRefusesARecordWithoutKeyAndATopicTooSmall(t *testing.T) {
	router, err := NewRouter(vectorTable(t, "tables/kr-seed42.json"), Options{Kafka: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := router.Partition(nil); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Fatalf("nil key: %v", err)
	}
	if p, err := router.Partition([]byte{}); err != nil || p < 0 { // the empty key is a key
		t.Fatalf("empty key: %d %v", p, err)
	}
	err = router.CheckPartitions("clicks", 4)
	if err == nil || !strings.Contains(err.Error(), `worker "w4" maps to partition 4, which topic "clicks" does not have`) {
		t.Fatalf("too few partitions: %v", err)
	}
	if err := router.CheckPartitions("clicks", 5); err != nil {
		t.Fatal(err)
	}
	named, _ := ParseTable(bytes.ReplaceAll(vectorBytes(t, "tables/kr-basic.json"), []byte("w2"), []byte("wx")))
	if named != nil {
		t.Fatal("a tampered table was accepted")
	}
}

func TestSplitKeysGoToTheLeastLoadedCandidateByCapacity(t *testing.T) {
	table := vectorTable(t, "tables/kr-seed42.json") // "hot-a": w0 (0.7, capacity 1), w1 (0.3, capacity 2)
	router, _ := NewRouter(table, Options{})
	var got []string
	for range 6 {
		w, _ := router.Route("hot-a")
		got = append(got, w)
	}
	// w0 first (larger weight, tie at 0), then w1 until its load/capacity passes w0's
	if strings.Join(got, " ") != "w0 w1 w1 w0 w1 w1" {
		t.Fatalf("%v", got)
	}
	if loads := router.LocalLoads(); loads["w0"] != 2 || loads["w1"] != 4 {
		t.Fatalf("%v", loads)
	}
}

// Goroutines routing through one router, split keys above all, by every entry point: each
// message routed is counted once (LocalLoads is, per worker, the messages the calls sent there),
// and one refused is not counted. Run by `make test` under the race detector too.
func TestConcurrentRoutesCountEveryMessageOnce(t *testing.T) {
	table := vectorTable(t, "tables/kr-seed42.json")
	router, _ := NewRouter(table, Options{Kafka: true})
	keys := []string{"hot-a", "hot-b", "", "ключ", "hot-a", "user-1", "hot-a", "ü-2", "hot-b"}
	const goroutines, messages = 8, 20000
	const refused = "(refused)"
	sent := make([]map[string]map[string]int64, goroutines) // goroutine -> key -> worker -> messages
	attempted := map[string]int64{}
	var wg sync.WaitGroup
	for g := range goroutines {
		sent[g] = map[string]map[string]int64{}
		for i := range messages {
			attempted[keys[(g+i)%len(keys)]]++
		}
		wg.Go(func() {
			for i := range messages {
				key := keys[(g+i)%len(keys)]
				var worker string
				var err error
				switch i % 4 {
				case 0:
					worker, err = router.Route(key)
				case 1:
					worker, _, err = router.RoutePartition(key)
				case 2:
					var p int32
					if p, err = router.Partition([]byte(key)); err == nil {
						worker = table.Workers[p].Name // w0 … w4 are partitions 0 … 4
					}
				case 3: // a topic without partition 4: w4's messages are refused
					var p int32
					if p, err = router.PartitionIn("clicks", 4, []byte(key)); err == nil {
						worker = table.Workers[p].Name
					} else if strings.Contains(err.Error(), `worker "w4" maps to partition 4`) {
						worker, err = refused, nil
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				if sent[g][key] == nil {
					sent[g][key] = map[string]int64{}
				}
				sent[g][key][worker]++
			}
		})
	}
	wg.Wait()
	perWorker, perKey := map[string]int64{}, map[string]int64{}
	var routed int64
	for _, byKey := range sent {
		for key, workers := range byKey {
			for worker, n := range workers {
				perKey[key] += n
				if worker == refused {
					continue
				}
				perWorker[worker] += n
				routed += n
				if candidates := table.HotKeys[key]; candidates != nil && !slices.ContainsFunc(
					candidates, func(c Target) bool { return table.Workers[c.Worker].Name == worker }) {
					t.Errorf("split key %q sent to %s, not one of its workers", key, worker)
				}
			}
		}
	}
	if !maps.Equal(perKey, attempted) { // every message of a key routed or refused, once
		t.Errorf("messages per key %v, sent %v", perKey, attempted)
	}
	loads := router.LocalLoads()
	var counted int64
	for _, n := range loads {
		counted += n
	}
	if counted != routed {
		t.Fatalf("%d messages counted, %d routed (%d sent, some refused)", counted, routed,
			goroutines*messages)
	}
	for _, w := range table.Workers {
		if loads[w.Name] != perWorker[w.Name] {
			t.Errorf("%s: local load %d, %d messages routed to it", w.Name, loads[w.Name], perWorker[w.Name])
		}
	}
	t.Logf("local loads %v; messages per key %v", loads, perKey)
}

func TestLocalLoadsRestartAtZeroWhenANewVersionIsInstalled(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "vectors")
	os.Mkdir(dir, 0o755)
	publish(t, dir, "v1.json", vectorBytes(t, "tables/kr-seed42.json"))
	router, err := Open(root, "vectors", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"hot-a", "hot-a", "hot-a", "user-1", "hot-a", "hot-a", "hot-a"} {
		router.Route(key) // w1 gets 4 of hot-a's messages under v1
	}
	publish(t, dir, "v2.json", vectorBytes(t, "tables/kr-legacy.json")) // hot-a: w1 (0.6), w2 (0.4)
	if !router.Reload() || router.Table().Version != 2 {
		t.Fatal("v2 was not installed")
	}
	if loads := router.LocalLoads(); !reflect.DeepEqual(loads, map[string]int64{"w0": 0, "w1": 0, "w2": 0}) {
		t.Fatalf("local loads after the reload: %v", loads)
	}
	fresh, _ := NewRouter(vectorTable(t, "tables/kr-legacy.json"), Options{})
	for i, key := range []string{"hot-a", "user-1", "hot-a", "user-2", "hot-a", "hot-a"} {
		got, _ := router.Route(key)
		want, _ := fresh.Route(key)
		if got != want {
			t.Fatalf("message %d (%q): %s, a fresh router on v2: %s", i, key, got, want)
		}
	}
	if got, want := router.LocalLoads(), fresh.LocalLoads(); !reflect.DeepEqual(got, want) {
		t.Fatalf("local loads %v, a fresh router on v2: %v", got, want)
	}
}

func TestLocalLoadsKeepGoingWhenTheSameVersionIsReadAgain(t *testing.T) {
	body := vectorBytes(t, "tables/kr-seed42.json")
	root := t.TempDir()
	dir := filepath.Join(root, "vectors")
	os.Mkdir(dir, 0o755)
	publish(t, dir, "v1.json", body)
	file := filepath.Join(root, "table.json")
	os.WriteFile(file, body, 0o644)
	for _, location := range []string{root, file} {
		router, err := Open(location, "vectors", Options{})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			router.Route("hot-a") // w0 w1 w1
		}
		publish(t, dir, "v9.json", body) // the store names another file: the same version 1
		later := time.Now().Add(time.Minute)
		os.Chtimes(file, later, later) // the file is read again
		if router.Reload() {
			t.Fatalf("%s: the same version read again counts as a new one", location)
		}
		if loads := router.LocalLoads(); loads["w0"] != 1 || loads["w1"] != 2 {
			t.Fatalf("%s: local loads after reading v1 again: %v", location, loads)
		}
		if w, _ := router.Route("hot-a"); w != "w0" { // the 4th: w0 (1/1) ties w1 (2/2), w0 first
			t.Fatalf("%s: %s", location, w)
		}
		publish(t, dir, "v1.json", body)
	}
}

func TestATableWithoutSplitKeysKeepsNoLocalLoads(t *testing.T) {
	router, err := NewRouter(vectorTable(t, "tables/kr-basic.json"), Options{Kafka: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"user-1", "user-2", "", "hot-a"} {
		router.Route(key)
		router.Partition([]byte(key))
		router.RoutePartition(key)
	}
	if loads := router.LocalLoads(); len(loads) != 0 {
		t.Fatalf("local loads under a table without hot_keys: %v", loads)
	}
}
