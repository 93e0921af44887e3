package kgoroute

import (
	"os"
	"path/filepath"
	"testing"

	routeplan "routeplan.dev/client"
)

// publish copies a vectors table into dir/vectors as name and points LATEST at it.
func publish(t *testing.T, dir, table, name string) {
	t.Helper()
	data, err := os.ReadFile("../../../schemas/vectors/tables/" + table)
	if err != nil {
		t.Fatal(err)
	}
	stream := filepath.Join(dir, "vectors")
	if err := os.MkdirAll(stream, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stream, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stream, "LATEST"), []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVersionHeaderNamesTheVersionTheRouterServes(t *testing.T) {
	dir := t.TempDir()
	publish(t, dir, "kr-seed42.json", "v1.json")
	router, err := routeplan.Open(dir, "vectors", routeplan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	if h := VersionHeader(router); h.Key != "routing_version" || string(h.Value) != "1" {
		t.Fatalf("%q=%q, want routing_version=1", h.Key, h.Value)
	}
	publish(t, dir, "kr-legacy.json", "v2.json") // version 2
	if !router.Reload() {
		t.Fatal("v2 not installed")
	}
	if h := VersionHeader(router); string(h.Value) != "2" {
		t.Fatalf("after the reload %q, want 2", h.Value)
	}
	if v := string(routeplan.RoutingVersionValue(9007199254740993)); v != "9007199254740993" {
		t.Fatalf("%q", v)
	}
}
