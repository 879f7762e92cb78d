package proxy_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/cassette"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestProxyRelaysOnlyWhatAnAnswerNeeds: an upstream's headers that act on
// the proxy's whole origin (Clear-Site-Data signs the operator out of the
// live page; Refresh, Link, Service-Worker-Allowed, CORS, Alt-Svc,
// Set-Cookie) never reach the app or the browser, on an operation's path
// (JSON and XML) or any other; what an API answer needs (Content-Type,
// Retry-After) does.
func TestProxyRelaysOnlyWhatAnAnswerNeeds(t *testing.T) {
	bad := map[string]string{"Clear-Site-Data": `"*"`, "Refresh": "0; url=https://evil.example/", "Link": "</x.css>; rel=stylesheet",
		"Service-Worker-Allowed": "/", "Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": "true",
		"Alt-Svc": `h3=":443"`, "Set-Cookie": "tracker=1; Path=/", "Strict-Transport-Security": "max-age=1", "X-Anything": "1",
		"Content-Disposition": "attachment; filename=x.html", "Location": "https://evil.example/"}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for k, v := range bad {
			w.Header().Set(k, v)
		}
		f := device.JSON
		if strings.Contains(r.Header.Get("Content-Type"), "xml") {
			f = device.XML
		}
		w.Header().Set("Content-Type", simtest.ContentType(f))
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, map[device.Format]string{device.JSON: `{"status":"error","error":{"code":"x","message":"busy"}}`,
			device.XML: `<xml><status>error</status><error><code>x</code><message>busy</message></error></xml>`}[f])
	}))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL, Fleet: fleet.Demo()})
	c := demoClient(t, p.URL())
	tg, _ := fleet.Demo().Target()
	for _, f := range []device.Format{device.JSON, device.XML} {
		r := c.Send(device.SendCommand, f, c.Command(tg.Devices["Light Dimmer"].SN, "Light Dimmer", simtest.S("dimming", "5")))
		checkRelayed(t, f.String(), r.Header, bad)
	}
	res, _ := do(t, "GET", p.URL()+"/anything/else", "", "", nil)
	checkRelayed(t, "GET /anything/else", res.Header, bad)
}

func checkRelayed(t *testing.T, what string, h http.Header, bad map[string]string) {
	t.Helper()
	for k := range bad {
		if v := h.Get(k); v != "" {
			t.Errorf("%s: the upstream's %s: %s was relayed", what, k, v)
		}
	}
	if h.Get("Retry-After") != "3" || h.Get("Content-Type") == "" {
		t.Errorf("%s: what an answer needs was not relayed: %v", what, h)
	}
}

// TestProxyRefusesItsOwnPathsSpelledOtherwise: /_SIM/, /_Sim/, /_sim;x/
// and /METRICS are refused (400 naming the path) and nothing reaches the
// upstream, which might route them case-insensitively or drop parameters
// and read them as its admin API.
func TestProxyRefusesItsOwnPathsSpelledOtherwise(t *testing.T) {
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL})
	for _, path := range []string{"/_SIM/reset", "/_Sim/state", "/_sim;x/reset", "/_sim;/state", "/_SIM", "/METRICS", "/metrics;a", "/_sIm/journal/1"} {
		for _, m := range []string{"GET", "POST"} {
			res, body := do(t, m, p.URL()+path, "application/json", "{}", nil)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"path"`) {
				t.Errorf("%s %s: %d %s, want 400 naming the path", m, path, res.StatusCode, body)
			}
		}
	}
	if n.Load() != 0 {
		t.Errorf("%d of those reached the upstream", n.Load())
	}
	// An ordinary path with a parameter still passes.
	if res, _ := do(t, "GET", p.URL()+"/v2;x/other", "", "", nil); res.StatusCode != http.StatusOK || n.Load() != 1 {
		t.Errorf("/v2;x/other: %d, upstream saw %d", res.StatusCode, n.Load())
	}
}

// TestProxyBoundsBodiesInFlight: with a slow upstream, concurrent 900 KB
// requests hold no more than the proxy's memory bound: beyond it they are
// answered 503 proxy_busy with Retry-After at once, never passed on; once
// the upstream answers, the bound is free again.
func TestProxyBoundsBodiesInFlight(t *testing.T) {
	release := make(chan struct{})
	var inUpstream, most atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		now := inUpstream.Add(1)
		for old := most.Load(); now > old && !most.CompareAndSwap(old, now); old = most.Load() {
		}
		<-release
		inUpstream.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success"}`)
	}))
	t.Cleanup(up.Close)
	const bound = 12 << 20 // four requests of 900 KB, each counted three times
	p := start(t, proxy.Config{Upstream: up.URL, MaxInFlight: bound})
	body := bytes.Repeat([]byte("x"), 900<<10)
	var wg sync.WaitGroup
	var busy atomic.Int64
	codes := make(chan string, 40)
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Post(p.URL()+"/v1/services/gateway/command", "application/json", bytes.NewReader(body))
			if err != nil {
				codes <- err.Error()
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "proxy_busy") && res.Header.Get("Retry-After") != "" {
				busy.Add(1)
			}
			codes <- fmt.Sprint(res.StatusCode)
		}()
	}
	// The refused ones come back while the others wait on the upstream.
	for busy.Load() < 30 {
		select {
		case c := <-codes:
			if c != "503" {
				close(release)
				t.Fatalf("an answer before the upstream answered: %s", c)
			}
		case <-time.After(20 * time.Second):
			close(release)
			t.Fatalf("only %d of 40 requests were refused while %d waited on the upstream", busy.Load(), inUpstream.Load())
		}
	}
	close(release)
	wg.Wait()
	if m := most.Load(); m > bound/(3*900<<10) || m == 0 {
		t.Errorf("%d requests of 900 KB were passed on at once with a bound of %d bytes", m, bound)
	}
	if res, _ := do(t, "POST", p.URL()+"/v1/services/gateway/command", "application/json", string(body), nil); res.StatusCode == http.StatusServiceUnavailable {
		t.Errorf("after the upstream answered, the bound is still taken: %d", res.StatusCode)
	}
}

// logBuffer collects a logger's lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestProxyRecordingIsBounded: with --record, requests that fail
// authentication (a wrong sign, by the fleet's keys; without a fleet, an
// answer that is no success) leave nothing on disk, however large and many;
// authenticated ones are recorded up to the cassette's entry and byte
// caps, and reaching a cap is said once in the log. Real HTTP, real files.
func TestProxyRecordingIsBounded(t *testing.T) {
	gw := upstream(t, simulator.Options{})
	for _, withFleet := range []bool{true, false} {
		dir := t.TempDir()
		w, err := cassette.NewWriter(dir)
		if err != nil {
			t.Fatal(err)
		}
		w.MaxEntries = 5
		var logs logBuffer
		cfg := proxy.Config{Upstream: gw.URL(), Record: w, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		if withFleet {
			cfg.Fleet = fleet.Demo()
		}
		p, err := proxy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Open("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		c := demoClient(t, p.URL())
		junk := strings.Repeat("j", 60<<10)
		for i := range 20 {
			env := c.Envelope()
			for k := range env {
				if env[k].Key == "sign" {
					env[k].Val = "0123456789abcdef0123456789abcdef" // wrong
				}
			}
			f := []device.Format{device.JSON, device.XML}[i%2]
			c.Send(device.SendCommand, f, append(env, simtest.S("sn", demoDimmer), simtest.S("type", "Light Dimmer"),
				simtest.S("dimming", fmt.Sprint(i)), simtest.S("junk", junk)))
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) != 0 {
			t.Errorf("fleet %v: %d cassettes recorded from requests that failed authentication", withFleet, len(files))
		}
		for i := range 12 {
			f := []device.Format{device.JSON, device.XML}[i%2]
			c.Send(device.SendCommand, f, dimmer(c, fmt.Sprint(i+1)))
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) != 5 {
			t.Errorf("fleet %v: %d cassettes with a cap of 5", withFleet, len(files))
		}
		if n := strings.Count(logs.String(), "cassette: the cap is reached"); n != 1 {
			t.Errorf("fleet %v: the cap is said %d times in the log:\n%s", withFleet, n, logs.String())
		}
	}
	// A byte cap.
	dir := t.TempDir()
	w, _ := cassette.NewWriter(dir)
	w.MaxBytes = 1500
	p := start(t, proxy.Config{Upstream: gw.URL(), Record: w, Fleet: fleet.Demo()})
	c := demoClient(t, p.URL())
	for i := range 10 {
		c.Send(device.SendCommand, device.JSON, dimmer(c, fmt.Sprint(i+1)))
	}
	var total int64
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		st, _ := os.Stat(f)
		total += st.Size()
	}
	if total > 1500 || len(files) == 0 || len(files) == 10 {
		t.Errorf("byte cap 1500: %d files, %d bytes", len(files), total)
	}
}

func dimmer(c *simtest.Client, v string) []simtest.F {
	return append(c.Envelope(), simtest.S("sn", demoDimmer), simtest.S("type", "Light Dimmer"), simtest.S("dimming", v))
}

// demoDimmer is the demo fleet's Light Dimmer.
var demoDimmer = func() string { t, _ := fleet.Demo().Target(); return t.Devices["Light Dimmer"].SN }()

// TestCassetteMasksByValue: an upstream whose answer repeats the request's
// api_key and sign and the key's secret (a service explaining a sign)
// leaves none of them in the cassette written. Real HTTP, real files.
func TestCassetteMasksByValue(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","note":"md5(key + demo-secret + ts); you sent %s"}`, strings.ReplaceAll(string(b), `"`, `'`))
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	w, _ := cassette.NewWriter(dir)
	p := start(t, proxy.Config{Upstream: up.URL, Record: w, Fleet: fleet.Demo()})
	c := demoClient(t, p.URL())
	body := simtest.Body(device.JSON, dimmer(c, "7"))
	do(t, "POST", p.URL()+device.SendCommand.Path(), "application/json", string(body), nil)
	_, signs := client.Credentials(string(body))
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 || len(signs) != 1 {
		t.Fatalf("%d cassettes, signs %v", len(files), signs)
	}
	b, _ := os.ReadFile(files[0])
	for _, s := range []string{"demo-secret", "demo-key", signs[0]} {
		if strings.Contains(string(b), s) {
			t.Errorf("the cassette holds %q:\n%s", s, b)
		}
	}
}
