//go:build linux

// The harness against hostile targets: each target below is a real HTTP
// (or raw TCP) server on loopback that misbehaves in one way. Whatever it
// does, gwconform must fail the checks cleanly with a reason (exit 1, not a
// crash and not 2), finish within its timeouts, keep its memory bounded and
// still write all three reports. Linux only: the peak memory is read from
// the child's /proc status (VmHWM), or else its rusage (Maxrss in KiB).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/check"
)

// hostileWallLimit is a safety net, not a timing test: every run below
// sends at most a few dozen requests of at most --timeout each.
const hostileWallLimit = 60 * time.Second

// hostileResult is the part of a report.json result these tests read.
type hostileResult struct {
	ID           string   `json:"id"`
	Level        string   `json:"level"`
	Outcome      string   `json:"outcome"`
	Failure      string   `json:"failure"`
	Observations []string `json:"observations"`
	DurationMS   float64  `json:"duration_ms"`
	Exchanges    []struct {
		Status          int               `json:"status"`
		Error           string            `json:"error"`
		Truncated       bool              `json:"truncated"`
		ResponseBody    string            `json:"response_body"`
		ResponseHeaders map[string]string `json:"response_headers"`
	} `json:"exchanges"`
}

type hostileRun struct {
	result
	results []hostileResult
	// rss is gwconform's peak resident memory in bytes.
	rss int64
}

// ran returns the results that ran (passed or failed).
func (h hostileRun) ran() []hostileResult {
	var out []hostileResult
	for _, r := range h.results {
		if r.Outcome == "passed" || r.Outcome == "failed" {
			out = append(out, r)
		}
	}
	return out
}

// hostileSlots bounds how many runs go at once, so that the wall time of
// each says more about gwconform than about the machine's other work.
var hostileSlots = make(chan struct{}, max(2, runtime.NumCPU()))

// runHostile runs gwconform against url and checks what every hostile
// target must leave behind: exit 1, within the wall limit, three reports
// that parse, at least one failed check, and a reason for every failure.
func runHostile(t *testing.T, url string, args ...string) hostileRun {
	t.Helper()
	hostileSlots <- struct{}{}
	// --skip-preflight: these targets answer garbage on purpose, and the
	// point is how every check copes with it (TestPreflight covers the stop).
	r := gwconform(t, append([]string{"--target", url, "--skip-preflight"}, args...)...)
	<-hostileSlots
	h := hostileRun{result: r}
	// gwconform's own peak, from its /proc status while it ran; where
	// there is none, an upper bound: Linux keeps in a child's Maxrss the
	// high-water mark of the memory it was forked from (this test
	// process's, which under -race alone can be 300 MiB).
	h.rss = r.hwm
	if ru, ok := r.ps.SysUsage().(*syscall.Rusage); ok && h.rss == 0 {
		h.rss = ru.Maxrss << 10
	}
	t.Logf("exit %d after %s, peak RSS %d MiB", r.code, r.took.Round(time.Millisecond), h.rss>>20)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (checks failed)\nstdout:\n%s\nstderr:\n%s", r.code, tail(r.stdout), tail(r.stderr))
	}
	if r.took > hostileWallLimit {
		t.Errorf("the run took %s, more than %s", r.took, hostileWallLimit)
	}
	doc := reports(t, r.dir) // all three written and parse
	b, err := os.ReadFile(filepath.Join(r.dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var full struct {
		Results []hostileResult `json:"results"`
	}
	if b, err = expandReport(b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &full); err != nil {
		t.Fatal(err)
	}
	h.results = full.Results
	if len(failed(doc)) == 0 {
		t.Fatalf("no check failed against a hostile target\n%s", tail(r.stdout))
	}
	for _, res := range h.results {
		if res.Outcome == "failed" && strings.TrimSpace(res.Failure) == "" {
			t.Errorf("%s failed without a reason", res.ID)
		}
		// The one interruption allowed is the run stopping itself after a
		// run of unanswered or 5xx requests: then the verdict says so.
		if res.Outcome == "interrupted" && !strings.Contains(res.Failure, "the run stops here, INCOMPLETE") {
			t.Errorf("%s was interrupted: %s", res.ID, res.Failure)
		}
	}
	ran := h.ran()
	if len(ran) == 0 {
		t.Fatal("no check ran")
	}
	slowest := ran[0]
	for _, res := range ran {
		if res.DurationMS > slowest.DurationMS {
			slowest = res
		}
	}
	t.Logf("%d checks ran, %d failed; the slowest, %s, took %.0f ms", len(ran), len(failed(doc)), slowest.ID, slowest.DurationMS)
	return h
}

// expectReasons checks that every failed check's reason contains one of
// the given phrases.
func expectReasons(t *testing.T, h hostileRun, phrases ...string) {
	t.Helper()
	for _, res := range h.results {
		if res.Outcome != "failed" {
			continue
		}
		ok := false
		for _, p := range phrases {
			ok = ok || strings.Contains(res.Failure, p)
		}
		if !ok {
			t.Errorf("%s failed for a reason that names none of %q:\n%s", res.ID, phrases, res.Failure)
		}
	}
}

// holdTarget accepts connections and never reads or answers; they are
// closed when the test ends.
func holdTarget(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String(), &accepted
}

// server is an httptest server on 127.0.0.1 closed when the test ends.
func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// hijack takes the raw connection of a request.
func hijack(t *testing.T, w http.ResponseWriter) (net.Conn, *bufio.ReadWriter) {
	c, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		panic(http.ErrAbortHandler)
	}
	return c, rw
}

// wait sleeps d unless the client went away first.
func wait(r *http.Request, d time.Duration) bool {
	select {
	case <-r.Context().Done():
		return false
	case <-time.After(d):
		return true
	}
}

func TestHostileTargets(t *testing.T) {
	// The generated method and path checks are left out: a HEAD whose
	// answer has no body is complete when its headers are, and the rest
	// add requests, not kinds of failure.
	const small = "--ginkgo.label-filter=op:message && level:MUST && transport && format:json && !gen:http-method && !gen:http-path"

	t.Run("never answers", func(t *testing.T) {
		t.Parallel()
		url, accepted := holdTarget(t)
		// The message's MUST transport checks in JSON, one request each, and its probes.
		h := runHostile(t, url, "--timeout", "300ms", "--ginkgo.skip=timestamp-drift",
			"--ginkgo.label-filter=op:message && level:MUST && transport && format:json && !gen:http-method && !gen:http-path || probe && op:message && format:json")
		if accepted.Load() == 0 {
			t.Fatal("gwconform never connected")
		}
		expectReasons(t, h, "no complete answer within 300ms")
		probes := 0
		for _, res := range h.ran() {
			if res.Level == "INFO" {
				probes++
				if res.Outcome != "passed" || len(res.Observations) == 0 || !strings.Contains(strings.Join(res.Observations, "\n"), "no answer") {
					t.Errorf("probe %s: %s, observations %q", res.ID, res.Outcome, res.Observations)
				}
			}
		}
		if probes == 0 {
			t.Error("no INFO probe ran")
		}
	})

	t.Run("stops answering: the rest fails without waiting", func(t *testing.T) {
		t.Parallel()
		url, accepted := holdTarget(t)
		// The whole suite: about 2,000 requests, which would take over six
		// minutes at 200 ms each if every check waited for its timeout.
		h := runHostile(t, url, "--timeout", "200ms")
		if n := accepted.Load(); n > 100 {
			t.Errorf("gwconform kept connecting to a silent target: %d connections", n)
		}
		expectReasons(t, h, "no complete answer within 200ms", "not sent: the target gave no answer")
		if doc := reports(t, h.dir); doc.Verdict != "INCOMPLETE" {
			t.Errorf("a target that stopped answering: verdict %s, want INCOMPLETE", doc.Verdict)
		}
	})

	t.Run("answers slowly", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int64
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			// Read the request first, so that the server notices when the
			// client goes away; and stop after a while in any case.
			io.Copy(io.Discard, r.Body)
			deadline := time.Now().Add(5 * time.Second)
			if n.Add(1)%2 == 0 {
				// The status line and headers, a byte at a time.
				c, rw := hijack(t, w)
				defer c.Close()
				for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n") {
					if rw.WriteByte(b) != nil || rw.Flush() != nil || time.Now().After(deadline) {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				return
			}
			// The body, a byte at a time, never ending.
			w.Header().Set("Content-Type", "application/json")
			rc := http.NewResponseController(w)
			for _, b := range []byte(`{"status":"success"` + strings.Repeat(" ", 1<<20)) {
				if _, err := w.Write([]byte{b}); err != nil || rc.Flush() != nil || !wait(r, 20*time.Millisecond) || time.Now().After(deadline) {
					return
				}
			}
		})
		h := runHostile(t, srv.URL, "--timeout", "300ms", small)
		expectReasons(t, h, "no complete answer within 300ms")
	})

	t.Run("sends gigabytes", func(t *testing.T) {
		t.Parallel()
		var sent, n atomic.Int64
		chunk := []byte(strings.Repeat("x", 64<<10))
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			k := n.Add(1)
			if k%4 == 0 {
				// A gigabyte of headers.
				c, rw := hijack(t, w)
				defer c.Close()
				rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
				for i := 0; i < 1<<30/len(chunk); i++ {
					if _, err := fmt.Fprintf(rw, "X-Pad-%d: %s\r\n", i, chunk); err != nil {
						return
					}
					sent.Add(int64(len(chunk)))
				}
				return
			}
			if k%4 == 1 {
				// Headers just under the client's limit, on every second answer.
				for i := 0; i < 200; i++ {
					w.Header().Set(fmt.Sprintf("X-Pad-%d", i), string(chunk[:1000]))
				}
			}
			// A gigabyte of body, streamed from one buffer, in a success
			// answer that never closes.
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"success","pad":"`)
			for i := 0; i < 1<<30/len(chunk); i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				sent.Add(int64(len(chunk)))
			}
		})
		// The message's MUST checks in JSON and XML, the envelope's and the
		// generated method and path checks left out: some forty requests,
		// some 5 MiB read by the kernel each before gwconform closes.
		h := runHostile(t, srv.URL, "--timeout", "5s", "--ginkgo.label-filter=op:message && level:MUST && !gen:http-method && !gen:http-path && !envelope")
		t.Logf("the target sent %d MiB in all", sent.Load()>>20)
		if h.rss > 300<<20 {
			t.Errorf("gwconform's peak RSS was %d MiB, more than 300 MiB", h.rss>>20)
		}
		truncated, refused, cut := 0, 0, 0
		for _, res := range h.results {
			for _, ex := range res.Exchanges {
				if ex.Truncated {
					truncated++
				}
				if strings.Contains(ex.Error, "header") {
					refused++
				}
				if _, ok := ex.ResponseHeaders["…"]; ok {
					cut++
				}
			}
		}
		if truncated == 0 || refused == 0 || cut == 0 {
			t.Errorf("%d exchanges with a cut body, %d refused for their headers and %d with headers cut in the report; want some of each",
				truncated, refused, cut)
		}
		for _, name := range []string{"report.json", "junit.xml", "report.html"} {
			if fi, err := os.Stat(filepath.Join(h.dir, name)); err == nil {
				t.Logf("%s: %d KiB", name, fi.Size()>>10)
				if fi.Size() > 64<<20 {
					t.Errorf("%s is %d MiB", name, fi.Size()>>20)
				}
			}
		}
	})

	t.Run("invalid UTF-8", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int64
		bodies := []struct{ ct, body string }{
			{"application/json", "{\"status\":\"success\xff\xfe\"}"},
			{"application/json", "{\"status\":\"success\",\"note\":\"\xc3\x28\"}"},
			{"application/json; charset=utf-8", "{\"status\":\"\xed\xa0\x80success\"}"},
			{"application/xml", "<?xml version=\"1.0\" encoding=\"UTF-8\"?><xml><status>success\xff</status></xml>"},
			{"application/xml", "<xml><status>success</status><note>\xc0\xaf\x00\x01\x1b[31m</note></xml>"},
			{"text/plain", "\x00\x01\x02\xff\xfe\xfd success \x7f\x1b]0;title\x07"},
		}
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			b := bodies[int(n.Add(1))%len(bodies)]
			w.Header().Set("Content-Type", b.ct)
			w.Header().Set("X-Junk", "\xff\xfe é")
			io.WriteString(w, b.body)
		})
		h := runHostile(t, srv.URL, "--timeout", "2s", "--ginkgo.label-filter=op:message && level:MUST && (transport || envelope || valid) || probe && op:message")
		for _, res := range h.ran() {
			if strings.HasSuffix(res.ID, ".valid.json") || strings.HasSuffix(res.ID, ".valid.xml") {
				if res.Outcome != "failed" {
					t.Errorf("%s %s with an invalid UTF-8 success answer", res.ID, res.Outcome)
				}
			}
		}
	})

	t.Run("malformed XML and JSON", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int64
		lol := `<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY a "aaaaaaaaaa">`
		prev := "a"
		for _, e := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
			lol += `<!ENTITY ` + e + ` "` + strings.Repeat("&"+prev+";", 10) + `">`
			prev = e
		}
		lol += `]><xml><status>&i;</status></xml>`
		bodies := []struct{ ct, body string }{
			{"application/xml", `<xml><status>succ`},
			{"application/xml", `<xml><status>success</xml>`},
			{"application/xml", lol},
			{"application/xml", "<xml>" + strings.Repeat("<a>", 100_000)},
			{"application/xml", `<xml><status a="1" a="2">success</status></xml>`},
			{"application/xml", `<?xml version="1.0" encoding="EBCDIC"?><xml><status>success</status></xml>`},
			{"application/xml", `<!-- just a comment -->`},
			{"application/json", `{"status":"success"`},
			{"application/json", `{"status":"success",}`},
			{"application/json", `{"status":"success"} trailing`},
			{"application/json", strings.Repeat("[", 500_000)},
			{"application/json", `{"status":["success"]}`},
			{"application/json", `{"status":NaN}`},
			{"application/json", `null`},
			{"application/json", `<xml><status>success</status></xml>`},
			{"application/xml", `{"status":"success"}`},
		}
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			b := bodies[int(n.Add(1))%len(bodies)]
			w.Header().Set("Content-Type", b.ct)
			io.WriteString(w, b.body)
		})
		h := runHostile(t, srv.URL, "--timeout", "2s", "--ginkgo.label-filter=op:message && level:MUST && (transport || valid) || probe && op:message && format:xml")
		if h.rss > 300<<20 {
			t.Errorf("gwconform's peak RSS was %d MiB, more than 300 MiB", h.rss>>20)
		}
		for _, res := range h.ran() {
			if (strings.HasSuffix(res.ID, ".valid.json") || strings.HasSuffix(res.ID, ".valid.xml")) && res.Outcome != "failed" {
				t.Errorf("%s %s with a malformed answer", res.ID, res.Outcome)
			}
		}
	})

	t.Run("redirects elsewhere", func(t *testing.T) {
		t.Parallel()
		var hits atomic.Int64
		elsewhere := server(t, func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"success"}`)
		})
		codes := []int{301, 302, 303, 307, 308}
		var n atomic.Int64
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), codes[int(n.Add(1))%len(codes)])
		})
		h := runHostile(t, srv.URL, "--timeout", "2s", "--ginkgo.label-filter=op:message && level:MUST && (transport || envelope || valid) || probe && op:message")
		if hits.Load() != 0 {
			t.Fatalf("gwconform followed a redirect to another host %d times", hits.Load())
		}
		for _, res := range h.results {
			for _, ex := range res.Exchanges {
				if ex.Status/100 != 3 {
					t.Errorf("%s: an exchange with status %d, want the 3xx as answered", res.ID, ex.Status)
				}
			}
		}
		expectReasons(t, h, "HTTP 30")
	})

	t.Run("closes mid-response", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int64
		cuts := []func(c net.Conn, rw *bufio.ReadWriter){
			func(net.Conn, *bufio.ReadWriter) {}, // closed before a byte
			func(_ net.Conn, rw *bufio.ReadWriter) { rw.WriteString("HTTP/1.1 200 OK\r\nContent-Ty") },
			func(_ net.Conn, rw *bufio.ReadWriter) {
				rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"status\":\"succ")
			},
			func(_ net.Conn, rw *bufio.ReadWriter) {
				rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n{\"status\":\"success\"}\r\n")
			},
			func(c net.Conn, rw *bufio.ReadWriter) { // reset, not closed
				rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
				rw.Flush()
				c.(*net.TCPConn).SetLinger(0)
			},
		}
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			c, rw := hijack(t, w)
			cuts[int(n.Add(1))%len(cuts)](c, rw)
			rw.Flush()
			c.Close()
		})
		// Not HTTP's own rules (label http): these answers break HTTP's
		// framing on purpose (a chunked answer to every request, HTTP/1.0
		// ones included; content cut short of its Content-Length), which
		// that family reports as the target's own failures.
		h := runHostile(t, srv.URL, "--timeout", "2s", "--ginkgo.label-filter=(op:message && level:MUST && (transport || envelope || valid) || probe && op:message) && !http")
		expectReasons(t, h, "no answer from the target", "not sent: the target gave no answer")
	})

	t.Run("answers 500 with HTML", func(t *testing.T) {
		t.Parallel()
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(500)
			io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>500</title></head><body><h1>Internal Server Error</h1><p>oops<br><hr></body></html>\n")
		})
		h := runHostile(t, srv.URL, "--timeout", "2s", "--ginkgo.label-filter=op:message && level:MUST || probe && op:message")
		expectReasons(t, h, "HTTP 500")
	})

	t.Run("hangs on some requests", func(t *testing.T) {
		t.Parallel()
		// A real simulator that never answers a JSON request; the harness
		// puts devices back in JSON, so those hang too.
		url := faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
			if strings.HasPrefix(strings.TrimSpace(string(body)), "{") {
				<-r.Context().Done()
				return true
			}
			return false
		})
		// The dimmer's MUST XML checks (every dimming case), whose
		// put-back hangs, and the valid JSON ones; not the state checks
		// (sim), which read the observer besides.
		h := runHostile(t, url, "--timeout", "300ms", "--ginkgo.label-filter=type:light-dimmer && level:MUST && !sim && (format:xml || valid)")
		passed := 0
		for _, res := range h.ran() {
			switch {
			case strings.HasSuffix(res.ID, ".xml"):
				if res.Outcome != "passed" {
					t.Errorf("%s %s although the target answers XML: %s", res.ID, res.Outcome, res.Failure)
				}
				passed++
			case res.Outcome != "failed":
				t.Errorf("%s %s although the target never answers JSON", res.ID, res.Outcome)
			}
		}
		want := 0
		for _, m := range conformance.Checks() {
			if m.DeviceType == "Light Dimmer" && m.Level == check.Must && m.Format == "xml" && !slices.Contains(m.Tags, "sim") {
				want++
			}
		}
		if passed != want || want < 9 {
			t.Errorf("%d of the %d XML checks passed; a hanging request stopped the others", passed, want)
		}
		expectReasons(t, h, "no complete answer within 300ms")
	})
}
