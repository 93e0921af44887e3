package routeplan

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
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

func TestConcurrentRoutesAreSafe(t *testing.T) {
	router, _ := NewRouter(vectorTable(t, "tables/kr-seed42.json"), Options{})
	keys := []string{"hot-a", "user-1", "", "ключ", "user-2", "hot-b"}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				if w, err := router.Route(keys[i%len(keys)]); err != nil || w == "" {
					t.Errorf("%q %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	var total int64
	for _, n := range router.LocalLoads() {
		total += n
	}
	if total < 10000 || total > 40000 { // exact under -race; plain counters may lose some
		t.Fatalf("%d messages counted, 40000 routed", total)
	}
}
