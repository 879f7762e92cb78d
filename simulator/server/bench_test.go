package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/fixtures"
	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/store"
)

// benchClock is the fixed time of the benchmarks: the signed timestamp is
// always fresh, so the window check runs as it does in service.
var benchClock = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// benchServer is a server over the demo fleet logging at info, gwsim's
// default: no line per request, one summary a minute.
func benchServer(b *testing.B) (*Server, *fleet.Fleet) {
	b.Helper()
	f := fleet.Demo()
	a := f.Authenticator()
	a.Now = func() time.Time { return benchClock }
	st := store.New(f, 0)
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return New(Config{Store: st, Auth: a, Logger: log, Now: func() time.Time { return benchClock }}), f
}

// benchBody is a published example with its placeholders filled and signed.
func benchBody(b *testing.B, f *fleet.Fleet, name string) []byte {
	b.Helper()
	raw, err := fixtures.Examples.ReadFile("examples/" + name)
	if err != nil {
		b.Fatal(err)
	}
	t, err := f.Target()
	if err != nil {
		b.Fatal(err)
	}
	ts := auth.Timestamp(benchClock, nil)
	typ := "Thermostat"
	if strings.Contains(name, "dimmer") {
		typ = "Light Dimmer"
	}
	r := strings.NewReplacer("<API_KEY>", t.Key.Key, "<TIMESTAMP>", ts,
		"<SIGNATURE>", auth.Sign(t.Key.Key, t.Key.Secret, ts), "<ACCOUNT_ID>", t.AccountID,
		"<GATEWAY_MAC>", t.MAC, "<DEVICE_SN>", t.Devices[typ].SN)
	return []byte(r.Replace(string(raw)))
}

// discardWriter is the cheapest http.ResponseWriter: the benchmark measures
// the handler, not a recorder.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

func benchRequest(b *testing.B, example string, op device.Operation, ct string) {
	s, f := benchServer(b)
	body := benchBody(b, f, example)
	h := s.Handler()
	w := &discardWriter{h: http.Header{}}
	rd := bytes.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, op.Path(), rd)
	req.Header.Set("Content-Type", ct)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// BenchmarkRequest is a whole send-command request through the handler:
// content type, body, codec, validation, authentication, store, answer and
// journal.
func BenchmarkRequest(b *testing.B) {
	b.Run("json/thermostat", func(b *testing.B) {
		benchRequest(b, "command-thermostat.json", device.SendCommand, "application/json")
	})
	b.Run("xml/thermostat", func(b *testing.B) {
		benchRequest(b, "command-thermostat.xml", device.SendCommand, "application/xml")
	})
	b.Run("json/dimmer", func(b *testing.B) {
		benchRequest(b, "command-light-dimmer.json", device.SendCommand, "application/json")
	})
	b.Run("xml/dimmer", func(b *testing.B) {
		benchRequest(b, "command-light-dimmer.xml", device.SendCommand, "application/xml")
	})
}
