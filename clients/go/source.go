package routeplan

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// fetched is one version's document as a source delivered it, not yet verified.
type fetched struct {
	tag   string // names this version at the source: file name and size, or the HTTP ETag
	where string
	body  []byte
}

func (f *fetched) table() (*Table, error) {
	t, err := ParseTable(f.body)
	if err != nil {
		return nil, fmt.Errorf("%s: refused: %w", f.where, err)
	}
	return t, nil
}

type source interface {
	// fetch returns the current version, or nil when its tag is known.
	fetch(known string) (*fetched, error)
}

func newSource(location, stream string, opts Options) (source, error) {
	if !validName.MatchString(stream) {
		return nil, fmt.Errorf("invalid stream name %q", stream)
	}
	if strings.HasPrefix(location, "http://") || strings.HasPrefix(location, "https://") {
		timeout := opts.Timeout
		if timeout == 0 {
			timeout = 10 * time.Second
		}
		u := strings.TrimRight(location, "/") + "/streams/" + url.PathEscape(stream) + "/latest"
		return &httpSource{url: u, token: opts.Token, client: &http.Client{Timeout: timeout}}, nil
	}
	if strings.Contains(location, "://") && !strings.HasPrefix(location, "file://") {
		return nil, fmt.Errorf("%s: the Go client reads a table file, a routing store directory or "+
			"the HTTP API (http(s)://); serve an object store's tables with `routeplan serve`", location)
	}
	location = strings.TrimPrefix(location, "file://")
	info, err := os.Stat(location)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return &storeSource{dir: filepath.Join(location, stream)}, nil
	}
	return &fileSource{path: location}, nil
}

// the name rule (schemas/name.schema.json)
var validName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// fileSource is one table file, read again when its size or modification time changes.
type fileSource struct{ path string }

func (s *fileSource) fetch(known string) (*fetched, error) {
	info, err := os.Stat(s.path)
	if err != nil {
		return nil, err
	}
	tag := fmt.Sprintf("%d@%d", info.Size(), info.ModTime().UnixNano())
	if tag == known {
		return nil, nil
	}
	body, err := readFile(s.path)
	if err != nil {
		return nil, err
	}
	return &fetched{tag: tag, where: s.path, body: body}, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		r = z
	}
	return io.ReadAll(io.LimitReader(r, MaxBytes+1))
}

// storeSource is a stream's folder of a routing store: LATEST names v<N>.json.
type storeSource struct{ dir string }

var latestName = regexp.MustCompile(`^v[1-9][0-9]*\.json$`)

func (s *storeSource) fetch(known string) (*fetched, error) {
	latest, err := os.ReadFile(filepath.Join(s.dir, "LATEST"))
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(string(latest))
	if !latestName.MatchString(name) {
		return nil, badVersion{fmt.Sprintf("%s/LATEST names no version file: %.40q", s.dir, name)}
	}
	if name == known {
		return nil, nil
	}
	path := filepath.Join(s.dir, name)
	body, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return &fetched{tag: name, where: path, body: body}, nil
}

// badVersion is a source that answers with something that is not a version: refused, like a
// bad document, not an outage.
type badVersion struct{ msg string }

func (e badVersion) Error() string { return e.msg }

// httpSource is the routing-table HTTP API: GET …/streams/<stream>/latest, If-None-Match.
type httpSource struct {
	url    string
	token  string
	client *http.Client
}

func (s *httpSource) fetch(known string) (*fetched, error) {
	req, err := http.NewRequest(http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	if known != "" {
		req.Header.Set("If-None-Match", known)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", s.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %.200s", s.url, resp.StatusCode, bytes.TrimSpace(body))
	}
	tag := resp.Header.Get("ETag")
	if tag == "" {
		sum := sha256.Sum256(body)
		tag = `"sha256:` + hex.EncodeToString(sum[:]) + `"`
	}
	if tag == known {
		return nil, nil
	}
	return &fetched{tag: tag, where: s.url, body: body}, nil
}

// Reload polls the source once; true when a new table now serves. It never fails for the
// source's sake: a refused version (logged once) or an outage (logged once) keeps the table.
func (r *Router) Reload() bool {
	if r.src == nil {
		return false
	}
	r.poll.Lock()
	defer r.poll.Unlock()
	old := r.Table()
	f, err := r.src.fetch(r.tag)
	if err != nil {
		if bad, ok := err.(badVersion); ok {
			r.reject(bad.msg, err)
			return false
		}
		if !r.down {
			r.log.Warn("routeplan: source unavailable, keeps serving the last good table",
				"stream", old.Stream, "version", old.Version, "error", err)
			r.down = true
		}
		return false
	}
	if r.down {
		r.log.Info("routeplan: source available again", "stream", old.Stream, "version", old.Version)
		r.down = false
	}
	if f == nil {
		return false
	}
	r.tag = f.tag // a bad version is not fetched again
	table, err := f.table()
	if err == nil {
		err = r.install(table)
	}
	if err != nil {
		r.reject(f.tag, err)
		return false
	}
	if r.rejected != "" {
		r.log.Info("routeplan: a good table again", "stream", old.Stream, "after", r.rejected)
		r.rejected = ""
	}
	changed := table.Version != old.Version || table.Checksum != old.Checksum
	if changed { // the same version read again changes nothing (install keeps it)
		r.log.Info("routeplan: now serving", "stream", table.Stream, "version", table.Version,
			"was", old.Version)
	}
	return changed
}

func (r *Router) reject(what string, err error) {
	if what != r.rejected {
		t := r.Table()
		r.log.Warn("routeplan: rejected a table, keeps serving the last good one", "stream", t.Stream,
			"rejected", what, "version", t.Version, "error", err)
		r.rejected = what
	}
}

func (r *Router) follow(interval time.Duration) {
	defer close(r.done)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-ticker.C:
			r.Reload()
		}
	}
}

// Close stops following the source; the current table keeps serving.
func (r *Router) Close() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
		r.stop = nil
	}
}
