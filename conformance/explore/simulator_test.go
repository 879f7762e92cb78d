package explore

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
)

// startSim starts gwsim in-process as a target (test files may).
func startSim(t testing.TB, f *fleet.Fleet) string {
	t.Helper()
	s, err := simulator.Start("127.0.0.1:0", simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.URL()
}

// TestSimulatorNeverFlagged: a faithful target is never flagged, over 100
// seeds of short sequences on the demo fleet, 20 of them with concurrent
// clients, and a generated fleet.
func TestSimulatorNeverFlagged(t *testing.T) {
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
