package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

var vias = []string{ViaRaw, ViaHTTP, ViaClient}

func startSim(t *testing.T, f *fleet.Fleet) *simulator.Simulator {
	t.Helper()
	return simtest.Start(t, simulator.Options{Fleet: f}).Simulator
}

// The load is valid: the simulator accepts every request of every
// operation in both formats, through each of the three senders.
func TestLoopbackBothFormats(t *testing.T) {
	f := fleet.Generate(5, 3, 20)
	for _, via := range vias {
		t.Run(via, func(t *testing.T) {
			sim := startSim(t, f)
			res, err := Run(context.Background(), Config{Target: sim.URL(), Fleet: f, Requests: 600,
				Concurrency: 4, Via: via, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() || res.Requests != 600 || res.Status[200] != 600 || res.Via != via {
				var b strings.Builder
				res.WriteText(&b)
				t.Fatalf("want 600 successes via %s:\n%s", via, b.String())
			}
			for _, op := range []string{"command", "message", "update_name"} {
				for _, format := range []string{"json", "xml"} {
					if res.Operations[op+"/"+format] == 0 {
						t.Errorf("no %s/%s in %v", op, format, res.Operations)
					}
				}
			}
			entries, total, _ := sim.Server.Journal().Read(0)
			if total != 600 {
				t.Errorf("the simulator saw %d requests", total)
			}
			for _, e := range entries {
				if e.Status != 200 {
					t.Errorf("journal: %+v", e)
				}
			}
			if res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.P99 || res.Latency.P99 > res.Latency.Max {
				t.Errorf("latency %+v", res.Latency)
			}
		})
	}
}

// rejecter answers success to most requests, and to some a 401 with an
// error body, or a 200 whose body does not say success, or a body that is
// not even JSON.
type rejecter struct {
	mu                     sync.Mutex
	n                      int
	rejected, fake, broken int
}

func (h *rejecter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	h.mu.Lock()
	h.n++
	n := h.n
	switch {
	case n%3 == 0:
		h.rejected++
	case n%5 == 0:
		h.fake++
	case n%7 == 0:
		h.broken++
	}
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case n%3 == 0:
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"status":"error","error":{"code":"bad_signature","field":"sign","message":"no"}}`)
	case n%5 == 0:
		io.WriteString(w, `{"status":"error"}`)
	case n%7 == 0:
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, `<html>bad gateway</html>`)
	default:
		io.WriteString(w, `{ "status": "success" }`) // not byte for byte the canonical body
	}
}

// Every answer but success counts as an error, and gwconform load exits 1.
func TestCountsEveryRejection(t *testing.T) {
	f := fleet.Demo()
	for _, via := range vias {
		t.Run(via, func(t *testing.T) {
			h := &rejecter{}
			srv := httptest.NewServer(h)
			defer srv.Close()
			res, err := Run(context.Background(), Config{Target: srv.URL, Fleet: f, Requests: 210, Concurrency: 3, Via: via})
			if err != nil {
				t.Fatal(err)
			}
			h.mu.Lock() // the race detector does not see the socket as a sync point
			defer h.mu.Unlock()
			want := int64(h.rejected + h.fake + h.broken)
			if h.n != 210 || res.Requests != 210 || res.Errors != want || res.OK() {
				t.Fatalf("server saw %d, rejected %d+%d+%d; result: %d requests, %d errors", h.n, h.rejected, h.fake, h.broken, res.Requests, res.Errors)
			}
			if res.Status[401] != int64(h.rejected) || res.Status[502] != int64(h.broken) {
				t.Errorf("status %v", res.Status)
			}
			var bad int64
			for kind, n := range res.Failures {
				if strings.HasPrefix(kind, "401 bad_signature (") {
					bad += n
				}
			}
			if bad != int64(h.rejected) {
				t.Errorf("failures %v", res.Failures)
			}
		})
	}
	srv := httptest.NewServer(&rejecter{})
	defer srv.Close()
	res, err := Run(context.Background(), Config{Target: srv.URL, Fleet: f, Requests: 30, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res.WriteText(&out)
	if res.OK() || !strings.Contains(out.String(), "401 bad_signature") {
		t.Errorf("OK %v\n%s", res.OK(), out.String())
	}
}

// A target that closes every connection gives no answer; each request is
// one error, counted once.
func TestNoAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	defer srv.Close()
	for _, via := range vias {
		res, err := Run(context.Background(), Config{Target: srv.URL, Fleet: fleet.Demo(), Requests: 20, Concurrency: 2, Via: via})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 20 || res.Errors != 20 || res.Status[0] != 20 {
			t.Errorf("%s: %d requests, %d errors, status %v, failures %v", via, res.Requests, res.Errors, res.Status, res.Failures)
		}
	}
}

// --rate is a ceiling on the request rate: N requests at rate R take at
// least (N-1)/R, and a run of duration D sends about R*D.
func TestRateIsRespected(t *testing.T) {
	f := fleet.Demo()
	sim := startSim(t, f)
	start := time.Now()
	res, err := Run(context.Background(), Config{Target: sim.URL(), Fleet: f, Rate: 100, Requests: 30, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 290*time.Millisecond || res.Requests != 30 || !res.OK() {
		t.Errorf("30 requests at 100/s took %s: %d requests, %d errors", took, res.Requests, res.Errors)
	}
	res, err = Run(context.Background(), Config{Target: sim.URL(), Fleet: f, Rate: 50, Duration: 500 * time.Millisecond, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	// A ceiling, not a promise: a busy machine may send fewer.
	if res.Requests > 25 || res.Requests < 1 || res.Elapsed < 480*time.Millisecond {
		t.Errorf("500ms at 50/s: %d requests in %s", res.Requests, res.Elapsed)
	}
}

// Requests are signed afresh: a simulator with a window of two seconds
// accepts every one of a run longer than that. (One second flaked: a
// timestamp has whole seconds, so a busy machine could send one that was
// already a second and a bit old.)
func TestSignsAfresh(t *testing.T) {
	f := fleet.Generate(2, 1, 10)
	f.TimestampWindow = &fleet.Duration{Duration: 2 * time.Second}
	sim := startSim(t, f)
	res, err := Run(context.Background(), Config{Target: sim.URL(), Fleet: f, Rate: 40, Duration: 3500 * time.Millisecond, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Elapsed < 3*time.Second {
		t.Errorf("%d requests in %s, %d errors: %v", res.Requests, res.Elapsed, res.Errors, res.Failures)
	}
}

func TestProgress(t *testing.T) {
	f := fleet.Demo()
	sim := startSim(t, f)
	var out syncBuffer
	res, err := Run(context.Background(), Config{Target: sim.URL(), Fleet: f, Rate: 200, Duration: 2100 * time.Millisecond, Progress: &out})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// One line a second; a busy machine may deliver a tick late, so the
	// count and the seconds shown are not held exactly.
	if len(lines) < 1 || !strings.HasPrefix(lines[0], "load:   ") || !strings.Contains(lines[0], "req/s  total") || !strings.HasSuffix(lines[0], "errors 0") {
		t.Errorf("progress:\n%s", out.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestParseMix(t *testing.T) {
	m, err := ParseMix("command=3, update_name=2")
	if err != nil || m != (Mix{Command: 3, Rename: 2}) {
		t.Errorf("%+v %v", m, err)
	}
	if _, err := ParseMix("command=-1"); err == nil {
		t.Error("negative weight")
	}
}

// The bodies are the harness's own: byte for byte what client.Encode
// writes, escapes included (both call codec.AppendRequest; this keeps them
// from drifting apart).
func TestBodiesMatchTheClient(t *testing.T) {
	odd := []string{"plain", `quo"te`, `back\slash`, "tab\tnew\nline\rcr", "\x01\x1f", "<&>'", "Zoë ☃ 𝄞",
		"\u2028\u2029", "bad\xffutf8", "\ufffd", "\b\f"}
	for _, format := range []device.Format{device.JSON, device.XML} {
		for _, v := range odd {
			fields := []kv{{Key: "name", Value: v}, {Key: "sn", Value: "0123"}}
			got, err := codec.AppendRequest(nil, format, fields)
			if err != nil {
				t.Fatal(err)
			}
			want, err := client.Encode(format, []client.Field{{Key: "name", Value: v}, {Key: "sn", Value: "0123"}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %q:\n got %s\nwant %s", format, v, got, want)
			}
		}
	}
}

// The raw sender reads answers of every framing: by length, chunked, up
// to the end of the connection, after an interim 100, and over the size
// kept.
func TestRawSenderFraming(t *testing.T) {
	big := strings.Repeat("x", 3*maxAnswer)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch n.Add(1) % 5 {
		case 0: // by length
			io.WriteString(w, `{"status":"success"}`)
		case 1: // chunked
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0"?><xml>`)
			w.(http.Flusher).Flush()
			io.WriteString(w, `<status>success</status></xml>`)
		case 2: // closes after
			w.Header().Set("Connection", "close")
			io.WriteString(w, `{"status":"success"}`)
		case 3: // too big to keep: read and dropped; not success
			io.WriteString(w, big)
		case 4: // interim answer first
			w.WriteHeader(http.StatusContinue)
			io.WriteString(w, `{"status":"success"}`)
		}
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{Target: srv.URL, Fleet: fleet.Demo(), Requests: 50, Via: ViaRaw})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 50 || res.Errors != 10 || res.Status[200] != 50 {
		t.Errorf("%d requests, %d errors (want 10, the big ones), status %v, failures %v", res.Requests, res.Errors, res.Status, res.Failures)
	}
}

// Cancelling the context ends the run early; requests cut short are
// neither counted nor failures.
func TestCancel(t *testing.T) {
	f := fleet.Demo()
	sim := startSim(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Config{Target: sim.URL(), Fleet: f, Duration: time.Minute, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Elapsed > 5*time.Second || res.Errors != 0 || res.Requests == 0 {
		t.Errorf("%d requests, %d errors in %s", res.Requests, res.Errors, res.Elapsed)
	}
}

// The histogram reports percentiles within its stated precision, keeps
// them through JSON, and a merge of parts is the histogram of the whole.
func TestHistogram(t *testing.T) {
	var whole Histogram
	parts := make([]Histogram, 3)
	for i := 1; i <= 10000; i++ {
		d := time.Duration(i) * time.Microsecond
		whole.Record(d)
		parts[i%3].Record(d)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5000 * time.Microsecond}, {90, 9000 * time.Microsecond}, {99, 9900 * time.Microsecond}, {100, 10 * time.Millisecond}} {
		got := whole.Percentile(c.p)
		if d := got - c.want; d < -time.Duration(float64(c.want)*HistogramPrecision) || d > time.Duration(float64(c.want)*HistogramPrecision) {
			t.Errorf("p%v = %s, want %s ±1%%", c.p, got, c.want)
		}
	}
	var merged Histogram
	for i := range parts {
		b, err := json.Marshal(&parts[i])
		if err != nil {
			t.Fatal(err)
		}
		var back Histogram
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		merged.Merge(&back)
	}
	if merged.Count() != 10000 || merged.Latency() != whole.Latency() {
		t.Errorf("merged %d: %+v, whole %+v", merged.Count(), merged.Latency(), whole.Latency())
	}
	var empty Histogram
	if b, _ := json.Marshal(&empty); string(b) != `""` || empty.Percentile(99) != 0 {
		t.Errorf("empty: %s", b)
	}
	if err := json.Unmarshal([]byte(`"bm90IGEgaGlzdG9ncmFt"`), &empty); err == nil {
		t.Error("a histogram that is not one: no error")
	}
}

// The sign sent is the md5 of CONTRACT 1 over the timestamp sent.
func TestSignMatches(t *testing.T) {
	f := fleet.Demo()
	p, err := newPlan(f, DefaultMix, []device.Format{device.JSON})
	if err != nil {
		t.Fatal(err)
	}
	var r request
	for i := 0; i < 20; i++ {
		if err := p.draw(context.Background(), newRNG(uint64(i)), time.Now(), &r); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range r.fields {
			got[f.Key] = f.Value
		}
		secret, _ := f.Secret(got["api_key"])
		if got["sign"] != auth.Sign(got["api_key"], secret, got["timestamp"]) || secret == "" {
			t.Errorf("sign %v", got)
		}
	}
}

func ExampleResult_WriteText() {
	res := &Result{Target: "http://127.0.0.1:8080", Concurrency: 4, Via: ViaRaw, Requests: 1000, Errors: 1,
		Elapsed: time.Second, Throughput: 1000, Status: map[int]int64{200: 999, 401: 1},
		Latency:    Latency{P50: 400 * time.Microsecond, P90: 800 * time.Microsecond, P99: 1900 * time.Microsecond, Max: 5 * time.Millisecond, Mean: 450 * time.Microsecond},
		Operations: map[string]int64{"command/json": 1000}, Failures: map[string]int64{"401 bad_signature (command/json)": 1}}
	res.WriteText(&stdout{})
	// Output:
	// 1000 requests in 1s to http://127.0.0.1:8080 (concurrency 4, rate as fast as answered, via raw)
	//   throughput  1000.0 requests/s
	//   latency     p50 0.40ms  p90 0.80ms  p99 1.90ms  max 5.00ms  (mean 0.45ms)
	//   status      200: 999, 401: 1
	//   operations  command/json: 1000
	//   errors      1 (every request was valid: anything but success is an error)
	//            1  401 bad_signature (command/json)
}

type stdout struct{}

func (stdout) Write(p []byte) (int, error) { fmt.Print(string(p)); return len(p), nil }

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }
