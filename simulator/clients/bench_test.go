package clients_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
)

// BenchmarkObserve is the client report's cost per request, a valid
// command answered 200, from many goroutines as a server calls it.
func BenchmarkObserve(b *testing.B) {
	r := clients.New(clients.Config{})
	ts := auth.Timestamp(time.Now(), time.UTC)
	body := []byte(`{"control":{"api_key":"demo-key","timestamp":"` + ts + `","sign":"` + auth.Sign("demo-key", "demo-secret", ts) +
		`","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"55"}}`)
	h := http.Header{"Content-Type": {"application/json"}}
	ok := []byte(`{"status":"success"}`)
	b.ReportAllocs()
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
