package clients_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
)

// observers is how many goroutines per processor the Observe benchmarks
// run, all with one api_key: 16 on 2 processors are the 32 connections
// of the bench's load, which once waited on each other in the Recorder.
const observers = 16

// BenchmarkObserve is the client report's cost per request, a valid
// command answered 200, from many goroutines of one api_key as a server
// calls it (the Recorder decodes the body itself, as gwsim proxy's does).
func BenchmarkObserve(b *testing.B) {
	r := clients.New(clients.Config{})
	ts := auth.Timestamp(time.Now(), time.UTC)
	body := []byte(`{"control":{"api_key":"demo-key","timestamp":"` + ts + `","sign":"` + auth.Sign("demo-key", "demo-secret", ts) +
		`","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"55"}}`)
	h := http.Header{"Content-Type": {"application/json"}}
	ok := []byte(`{"status":"success"}`)
	b.ReportAllocs()
	b.SetParallelism(observers)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Observe(clients.Exchange{Time: time.Now(), Path: device.SendCommand.Path(), ContentType: "application/json",
				Body: body, Status: 200, Header: h, Answer: ok})
		}
	})
}

// BenchmarkServe is a whole send-command request through gwsim's handler,
// with the client report and without (its cost is the difference).
func BenchmarkServe(b *testing.B) {
	for _, off := range []bool{false, true} {
		name := map[bool]string{false: "report", true: "no-report"}[off]
		b.Run(name, func(b *testing.B) {
			sim, err := simulator.Build(simulator.Options{NoClientReport: off, SummaryEvery: -1})
			if err != nil {
				b.Fatal(err)
			}
			ts := auth.Timestamp(time.Now(), time.UTC)
			body := []byte(`{"control":{"api_key":"demo-key","timestamp":"` + ts + `","sign":"` + auth.Sign("demo-key", "demo-secret", ts) +
				`","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"55"}}`)
			h := sim.Server.Handler()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := &nullWriter{h: http.Header{}}
				for pb.Next() {
					req := httptest.NewRequest(http.MethodPost, device.SendCommand.Path(), bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					clear(w.h)
					h.ServeHTTP(w, req)
				}
			})
		})
	}
}

type nullWriter struct{ h http.Header }

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nullWriter) WriteHeader(int)             {}

// decoded is a valid command as gwsim serve hands it to the Recorder:
// its fields already decoded, answered 200.
func decoded(b testing.TB) clients.Exchange {
	ts := auth.Timestamp(time.Now(), time.UTC)
	body := []byte(`{"control":{"api_key":"demo-key","timestamp":"` + ts + `","sign":"` + auth.Sign("demo-key", "demo-secret", ts) +
		`","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"55"}}`)
	pairs, derr := codec.DecodeInto(device.JSON, body, nil)
	if derr != nil {
		b.Fatal(derr)
	}
	return clients.Exchange{Time: time.Now(), Path: device.SendCommand.Path(), ContentType: "application/json",
		Body: body, Status: 200, Header: http.Header{}, Answer: []byte(`{"status":"success"}`), Format: device.JSON, Pairs: pairs}
}

// BenchmarkObserveDecoded is the client report's cost per request as
// gwsim serve pays it (fields handed over, Trusted, answered 200), from
// many goroutines of one api_key (observers per processor): the figure
// that guards the report's place on the request path (0 allocations;
// make bench reports its ns/op, which holds the fold's share).
func BenchmarkObserveDecoded(b *testing.B) {
	r := clients.New(clients.Config{Trusted: true})
	ex := decoded(b)
	b.ReportAllocs()
	b.SetParallelism(observers)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Observe(ex)
		}
	})
}

// TestObserveAllocatesNothing: once a client is known, a request of it
// answered 200 costs the report no allocation, a replay (whose breach is
// counted) included.
func TestObserveAllocatesNothing(t *testing.T) {
	r := clients.New(clients.Config{Trusted: true})
	ex := decoded(t)
	r.Observe(ex)
	if n := testing.AllocsPerRun(200, func() { r.Observe(ex) }); n != 0 {
		t.Errorf("a known client's request allocates %v times", n)
	}
	refused := ex
	refused.Status, refused.Header = 400, http.Header{"Content-Type": {"application/json"}}
	refused.Answer = []byte(`{"status":"error","error":{"code":"invalid_field","field":"dimming","message":"dimming must be 0 to 100"}}`)
	// An error answer gwsim hands over with its own verdict and error:
	// nothing parsed again, only its example kept (a code's first time).
	refused.Validated = true
	refused.Invalid = device.Errorf(device.CodeInvalidField, "dimming", "dimming must be 0 to 100")
	refused.AnswerError = refused.Invalid
	r.Observe(refused)
	if n := testing.AllocsPerRun(200, func() { r.Observe(refused) }); n > 0 {
		t.Errorf("a refused request handed over allocates %v times", n)
	}
	if n := testing.AllocsPerRun(200, func() { r.Observe(ex) }); n != 0 {
		t.Errorf("after an error, a known client's request allocates %v times", n)
	}
	if c, _ := r.Report().Client(clients.Mask("demo-key")); c.Requests != 605 || c.Judgement(clients.JudgeNoReplay).Violations != 604 { // AllocsPerRun runs once more than asked
		t.Errorf("requests %d", c.Requests)
	}
}

// BenchmarkObserveFresh is BenchmarkObserveDecoded with the requests a
// working app sends: each with its own fields, timestamp and sign, so
// that none is a replay (1,100 of them in turn, more than the sent
// window holds).
func BenchmarkObserveFresh(b *testing.B) {
	r := clients.New(clients.Config{Trusted: true})
	now := time.Now()
	var exs []clients.Exchange
	for s := 0; s < 11; s++ {
		ts := auth.Timestamp(now.Add(time.Duration(s-5)*time.Second), time.UTC)
		for dim := 0; dim < 100; dim++ {
			body := []byte(`{"control":{"api_key":"demo-key","timestamp":"` + ts + `","sign":"` + auth.Sign("demo-key", "demo-secret", ts) +
				`","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"` + strconv.Itoa(dim) + `"}}`)
			pairs, derr := codec.DecodeInto(device.JSON, body, nil)
			if derr != nil {
				b.Fatal(derr)
			}
			exs = append(exs, clients.Exchange{Time: now, Path: device.SendCommand.Path(), ContentType: "application/json",
				Body: body, Status: 200, Header: http.Header{}, Answer: []byte(`{"status":"success"}`), Format: device.JSON, Pairs: pairs})
		}
	}
	var next atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism(observers)
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(uint64(len(exs)) / 7)
		for pb.Next() {
			i++
			r.Observe(exs[i%uint64(len(exs))])
		}
	})
	b.StopTimer()
	if c, _ := r.Report().Client(clients.Mask("demo-key")); c.Requests != uint64(b.N) {
		b.Fatalf("%d requests recorded of %d", c.Requests, b.N)
	}
}
