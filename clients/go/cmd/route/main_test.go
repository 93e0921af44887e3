package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const vectorsDir = "../../../../schemas/vectors"

// The tool prints, for every case of the shared vectors, exactly the expected lines.
func TestRoutePrintsTheVectorsLines(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(vectorsDir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Cases []struct {
			Name, Table string
			Partitions  *int
			Keys        []string
			Expected    []string
		}
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	for _, c := range vectors.Cases {
		if strings.Contains(c.Table, "2p24") {
			continue // the package's own vectors test routes it; once is enough
		}
		args := []string{"--table", filepath.Join(vectorsDir, c.Table)}
		if c.Partitions != nil {
			args = append(args, "--partitions", strconv.Itoa(*c.Partitions))
		}
		var out bytes.Buffer
		stdin := strings.Join(c.Keys, "\n") // no newline after the last key: optional
		if err := run(args, strings.NewReader(stdin), &out); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if want := strings.Join(c.Expected, "\n") + "\n"; out.String() != want {
			t.Errorf("%s: output differs from the vectors", c.Name)
		}
	}
}

func TestRouteRefusesBadTablesTooFewPartitionsAndBadInput(t *testing.T) {
	for args, want := range map[string]string{
		"--table " + vectorsDir + "/refused/truncated.json":               "refused: not JSON",
		"--table " + vectorsDir + "/tables/kr-seed42.json --partitions 4": `worker "w4" maps to partition 4`,
		"--table " + vectorsDir + "/tables/pa-basic.json --partitions 4":  "--partitions is for key_routing",
		"--table /nonexistent.json":                                       "no such file",
	} {
		err := run(strings.Fields(args), strings.NewReader("k\n"), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	err := run([]string{"--table", vectorsDir + "/tables/kr-basic.json"}, strings.NewReader("a\n\xff\n"), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}
