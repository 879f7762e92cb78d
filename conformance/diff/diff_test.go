package diff

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// startSim starts gwsim in-process (test files may) and returns its URL;
// with wrap, behind that handler.
func startSim(t testing.TB, f *fleet.Fleet, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	if wrap == nil {
		return simtest.Start(t, simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).URL()
	}
	sim := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(wrap(sim.Server.Handler()))
	t.Cleanup(srv.Close)
	return srv.URL
}

// side is a target with its own reads and reset.
func side(t testing.TB, url string, f *fleet.Fleet) Side {
	t.Helper()
	w, err := explore.NewWorld(f)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := explore.NewTarget(url, f, nil, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	tg.Observer, tg.Reset = url, true
	return Side{Target: tg, World: w}
}

func differ(t testing.TB, a, b Side, cfg Config) *Differ {
	t.Helper()
	cfg.A, cfg.B = a, b
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// acceptsDimming101 answers success to a dimming of 101 without storing it.
func acceptsDimming101(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"dimming":"101"`)) || bytes.Contains(body, []byte(`<dimming>101</dimming>`)) {
			w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
			if strings.Contains(r.Header.Get("Content-Type"), "xml") {
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`)
			} else {
				io.WriteString(w, `{"status":"success"}`)
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

func TestTwoCopiesOfGwsimAreTheSame(t *testing.T) {
	f := fleet.Demo()
	for _, clients := range []int{1, 4} {
		d := differ(t, side(t, startSim(t, f, nil), f), side(t, startSim(t, f, nil), f), Config{Seed: 1, Operations: 1500, Clients: clients})
		rep, err := d.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Differences) != 0 || rep.Operations != 1500 {
			t.Fatalf("%d clients: two copies of gwsim differ:\n%s", clients, rep.Summary())
		}
	}
}

func TestFindsAndShrinksADeviation(t *testing.T) {
	f := fleet.Demo()
	d := differ(t, side(t, startSim(t, f, nil), f), side(t, startSim(t, f, acceptsDimming101), f), Config{Seed: 2, Operations: 3000})
	rep, err := d.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) == 0 {
		t.Fatalf("no difference found:\n%s", rep.Summary())
	}
	x := rep.Differences[0]
	if x.Kind != "answer" || x.Verdict != SideA || len(x.Ops) != 1 || !x.Reproducible || x.Rule != "API-2.3.dimming" {
		t.Errorf("difference: kind %s verdict %s rule %s, %d ops, reproducible %v\n%s", x.Kind, x.Verdict, x.Rule, len(x.Ops), x.Reproducible, rep.Summary())
	}
	t.Log(rep.Summary())
}
