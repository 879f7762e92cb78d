package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestRetriesAreNewAttemptsAtEveryWindowEdge: a faithful service that asks
// now and then to retry (429 with Retry-After: 1), and always asks so the
// first time it sees a message whose timestamp is near the window's edge,
// passes at --fail-on should, serial and --parallel: each retry is a new
// attempt whose timestamp is written again for the second it is sent in
// and signed afresh, so an edge is tested where it is meant. The report
// keeps every attempt with its answer.
func TestRetriesAreNewAttemptsAtEveryWindowEdge(t *testing.T) {
	simtest.Heavy(t)
	ts := regexp.MustCompile(`"timestamp":"(\d{14})"|<timestamp>(\d{14})</timestamp>`)
	var n, edges atomic.Int64
	var mu sync.Mutex
	seen := map[string]bool{}
	reset := func() {
		mu.Lock()
		defer mu.Unlock()
		seen = map[string]bool{}
	}
	url := faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		ask := n.Add(1)%150 == 0
		if m := ts.FindSubmatch(body); m != nil && strings.HasSuffix(r.URL.Path, "/message") {
			stamp := string(m[1]) + string(m[2])
			_ = stamp
			if at, err := time.Parse("20060102150405", stamp); err == nil {
				off := time.Until(at)
				if off > 290*time.Second || off < -290*time.Second {
					// Once per check: its attempts share the offset
					// from the clock and the format.
					key := r.Header.Get("Content-Type") + off.Round(time.Second).String()
					mu.Lock()
					if !seen[key] {
						seen[key], ask = true, true
						edges.Add(1)
					}
					mu.Unlock()
				}
			}
		}
		if !ask {
			return false
		}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"status":"error","error":{"code":"rate_limited","message":"slow down"}}`))
		return true
	})
	for _, parallel := range []string{"1", "2"} {
		reset()
		r := gwconform(t, "--target", url, "--fail-on", "should", "--allow-partial", "--parallel", parallel, "--ginkgo.label-filter", "!sim")
		if r.code != 0 {
			t.Fatalf("--parallel %s: exit %d: a faithful service that asks to retry got a false failure\n%s\n%s", parallel, r.code, tail(r.stdout), r.stderr)
		}
		b, err := os.ReadFile(filepath.Join(r.dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = expandReport(b); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Results []struct {
				ID        string `json:"id"`
				Exchanges []struct {
					Status       int    `json:"status"`
					Body         string `json:"request_body"`
					RetriedAfter int64  `json:"retried_after_ns"`
				} `json:"exchanges"`
			} `json:"results"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		retried := 0
		for _, res := range doc.Results {
			for i, ex := range res.Exchanges {
				if ex.RetriedAfter == 0 {
					continue
				}
				retried++
				if ex.Status != http.StatusTooManyRequests || i+1 == len(res.Exchanges) {
					t.Errorf("%s: exchange %d asked to retry (%d) but no attempt follows it", res.ID, i+1, ex.Status)
					continue
				}
				// A check whose meaning depends on its timestamp (the
				// window's edges, a valid request) sends a new one; a
				// body sent as bytes (a malformed one) keeps its own,
				// still well inside the window after a wait of seconds.
				a, b := ts.FindStringSubmatch(ex.Body), ts.FindStringSubmatch(res.Exchanges[i+1].Body)
				if a != nil && b != nil && a[0] == b[0] && (strings.Contains(res.ID, "window") || strings.Contains(res.ID, ".valid")) {
					t.Errorf("%s: the retry re-sent the timestamp of the first attempt: %s", res.ID, a[0])
				}
			}
		}
		if retried == 0 {
			t.Errorf("--parallel %s: no report shows an attempt that asked to retry", parallel)
		}
	}
	if edges.Load() < 4 {
		t.Errorf("only %d window-edge requests were asked to retry", edges.Load())
	}
}
