package explore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// startSim starts gwsim in-process as a target (test files may).
func startSim(t testing.TB, f *fleet.Fleet) string {
	t.Helper()
	return simtest.Start(t, simulator.Options{Fleet: f}).URL()
}

// TestSimulatorNeverFlagged: a faithful target is never flagged, over 100
// seeds of short sequences on the demo fleet, 20 of them with concurrent
// clients, and a generated fleet.
func TestSimulatorNeverFlagged(t *testing.T) {
	simtest.Heavy(t)
	demo := fleet.Demo()
	url := startSim(t, demo)
	for seed := int64(0); seed < 100; seed++ {
		cfg := Config{Seed: seed, Operations: 150, ShrinkBudget: 5 * time.Second}
		if seed%5 == 0 {
			cfg.Clients, cfg.Operations = 4, 80
		}
		rep, err := explorer(t, url, demo, cfg).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Found != nil {
			t.Fatalf("seed %d: gwsim was flagged:\n%s", seed, rep.Summary())
		}
	}
	gen := fleet.Generate(5, 3, 10)
	rep, err := explorer(t, startSim(t, gen), gen, Config{Seed: 5, Operations: 1000}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found != nil {
		t.Fatalf("gwsim with a generated fleet was flagged:\n%s", rep.Summary())
	}
}

// TestReplicasOnRedisLinearizable: three gwsim replicas sharing one Redis,
// concurrent clients spread over them, and sequential operations going to
// each in turn: no disagreement, no linearizability violation.
func TestReplicasOnRedisLinearizable(t *testing.T) {
	r := simtest.StartRedis(t, false)
	f := fleet.Demo()
	var urls []string
	for i := range 3 {
		s := simtest.Start(t, simulator.Options{Fleet: f, StoreURL: r.URL(), StoreReset: i == 0,
			Replica: fmt.Sprintf("r%d", i), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		urls = append(urls, s.URL())
	}
	for _, cfg := range []Config{{Seed: 1, Operations: 600}, {Seed: 2, Operations: 600, Clients: 6}} {
		w, _ := NewWorld(f)
		tg, err := NewTarget(strings.Join(urls, ","), f, nil, nil, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.Close)
		tg.Observer, tg.Reset = urls[0], true
		cfg.Target, cfg.World = tg, w
		x, _ := New(cfg)
		rep, err := x.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Found != nil {
			t.Fatalf("replicas on Redis flagged (%d clients):\n%s", cfg.Clients, rep.Summary())
		}
	}
}
