package explore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// explorer is an Explorer of url with its own reads and reset.
func explorer(t testing.TB, url string, f *fleet.Fleet, cfg Config) *Explorer {
	t.Helper()
	w, err := NewWorld(f)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := NewTarget(url, f, nil, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	tg.Observer, tg.Reset = url, true
	cfg.Target, cfg.World = tg, w
	x, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestFaithfulTargetAgrees(t *testing.T) {
	f := fleet.Demo()
	x := explorer(t, startTarget(t, faithful, f), f, Config{Seed: 1, Operations: 3000})
	rep, err := x.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found != nil {
		t.Fatalf("a faithful target was flagged:\n%s", rep.Summary())
	}
	if rep.Operations != 3000 {
		t.Errorf("sent %d operations, want 3000", rep.Operations)
	}
}

// TestFindsEachBug: explore finds each deliberate bug within 30 s and
// shrinks it to at most six operations.
func TestFindsEachBug(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  bug
	}{
		{"ignores its fifth command", ignoresNth},
		{"rename undone by a command", renameUndone},
		{"two gateways share a device's state", sharedState},
		{"message log keeps three", shortMessageLog},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fleet.Demo()
			dir := t.TempDir()
			x := explorer(t, startTarget(t, tc.bug, f), f, Config{Seed: 7, Duration: 30 * time.Second, ReportDir: dir})
			start := time.Now()
			rep, err := x.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Found == nil {
				t.Fatalf("not found in %s:\n%s", time.Since(start), rep.Summary())
			}
			if n := len(rep.Found.Ops); n > 6 || !rep.Found.Reproducible {
				t.Errorf("shrunk to %d operations (reproducible %v), want at most 6:\n%s", n, rep.Found.Reproducible, rep.Summary())
			}
			var out strings.Builder
			if again, err := x.Replay(context.Background(), rep.Found, &out); err != nil || !again || !strings.Contains(out.String(), "disagrees at operation") {
				t.Errorf("replayed, the shrunk sequence did not disagree again (%v):\n%s", err, out.String())
			}
			t.Logf("%s", rep.Summary())
		})
	}
}

func TestFindsLostUpdate(t *testing.T) {
	f := fleet.Demo()
	dir := t.TempDir()
	x := explorer(t, startTarget(t, lostUpdate, f), f, Config{Seed: 3, Duration: 30 * time.Second, Clients: 4, ReportDir: dir})
	rep, err := x.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found == nil || rep.Found.Kind != "linearizability" {
		t.Fatalf("lost update not found as a linearizability violation:\n%s", rep.Summary())
	}
	clients := map[int]bool{}
	for _, op := range rep.Found.Ops {
		clients[op.Client] = true
	}
	if len(rep.Found.Ops) > 6 || len(clients) > 2 {
		t.Errorf("shrunk to %d operations of %d clients, want at most 6 of 2:\n%s", len(rep.Found.Ops), len(clients), rep.Summary())
	}
	if _, err := os.Stat(filepath.Join(dir, PictureName)); err != nil {
		t.Errorf("no Porcupine picture: %v", err)
	}
	t.Logf("%s", rep.Summary())
}

// TestObserverOnAnotherPort: a plain CONTRACT 7 observer on its own port,
// with no reset, is enough to find a bug only the state shows; without an
// observer only answers are judged, and the report says so.
func TestObserverOnAnotherPort(t *testing.T) {
	f := fleet.Demo()
	api, _ := startSplitTarget(t, renameUndone, f, true)
	w, _ := NewWorld(f)
	tg, err := NewTarget(api, f, nil, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	tg.Reset = true
	if tg.ProbeObserver(context.Background(), w, api) {
		t.Fatal("the API port answered the observer's reads")
	}
	// No observer: answers only; the bug changes no answer.
	x, _ := New(Config{Target: tg, World: w, Seed: 7, Operations: 500})
	rep, err := x.Run(context.Background())
	if err != nil || rep.Found != nil || len(rep.Notes) == 0 || !strings.Contains(rep.Notes[0], "effects not observed") {
		t.Fatalf("without an observer: %v\n%s", err, rep.Summary())
	}
	// With an observer, on a target as its fleet has it: a target that
	// cannot be reset keeps what an earlier run left, and a bug seen on
	// that cannot be reproduced to shrink it.
	api, obs := startSplitTarget(t, renameUndone, f, true)
	tg, err = NewTarget(api, f, nil, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	tg.Reset = true
	if !tg.ProbeObserver(context.Background(), w, obs) {
		t.Fatal("the observer does not answer")
	}
	x, _ = New(Config{Target: tg, World: w, Seed: 7, Duration: 30 * time.Second})
	rep, err = x.Run(context.Background())
	if err != nil || rep.Found == nil || len(rep.Found.Ops) > 6 {
		t.Fatalf("with the observer: %v\n%s", err, rep.Summary())
	}
}

func TestInterruptedRunReports(t *testing.T) {
	f := fleet.Demo()
	x := explorer(t, startTarget(t, faithful, f), f, Config{Seed: 1, Duration: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	rep, err := x.Run(ctx)
	if err != nil || rep.Found != nil || rep.Operations == 0 {
		t.Fatalf("an interrupted run: %v\n%s", err, rep.Summary())
	}
}
