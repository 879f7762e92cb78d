package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Asynchronous devices: a gateway that answers before the device has
// taken the change. The effect checks wait for it (--settle) and say how
// long it took; a device that never takes a change fails its checks
// without stretching the run by the settle time of every check.

// lagging serves gwsim with fleet f so that every change appears at the
// observer lag after its answer (never, when lag < 0): one simulator
// answers each request at once, a second one, whose reads of CONTRACT 7
// are the observer's, is sent the same request lag later.
func lagging(t *testing.T, f *fleet.Fleet, lag time.Duration) string {
	t.Helper()
	return laggingSlow(t, f, lag, "", 0)
}

// laggingSlow is lagging, with every request naming the device slowSN
// answered after slowBy (a slow device that also applies late).
func laggingSlow(t *testing.T, f *fleet.Fleet, lag time.Duration, slowSN string, slowBy time.Duration) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	answers := simulator.New(simulator.Options{Fleet: f, Logger: quiet}).Server.Handler()
	applies := simulator.New(simulator.Options{Fleet: f, Logger: quiet}).Server.Handler()
	type later struct {
		due  time.Time
		r    *http.Request
		body []byte
	}
	queue := make(chan later, 1<<16)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case l := <-queue:
				if d := time.Until(l.due); d > 0 {
					select {
					case <-done:
						return
					case <-time.After(d):
					}
				}
				l.r.Body = io.NopCloser(bytes.NewReader(l.body))
				applies.ServeHTTP(httptest.NewRecorder(), l.r)
			}
		}
	}()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_sim/") {
			applies.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		if slowSN != "" && bytes.Contains(body, []byte(slowSN)) {
			time.Sleep(slowBy)
		}
		answers.ServeHTTP(w, r)
		if lag >= 0 {
			queue <- later{due: time.Now().Add(lag), r: r.Clone(r.Context()).WithContext(t.Context()), body: body}
		}
	}))
	t.Cleanup(func() { srv.Close(); close(done); wg.Wait() })
	return srv.URL
}

// settleLines are the report's settle lines of each check.
func settleLines(t *testing.T, dir string) map[string][]string {
	t.Helper()
	var doc struct {
		Results []struct {
			ID     string   `json:"id"`
			Settle []string `json:"settle"`
		} `json:"results"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err = expandReport(b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range doc.Results {
		if len(r.Settle) > 0 {
			out[r.ID] = r.Settle
		}
	}
	return out
}

// TestLateChangesPassOnceSettled: every change appears 300 ms after its
// answer. The suite passes at --fail-on should, serial and with
// --parallel, and the report says how long each change took; read at once
// (--settle 0) the same target fails its effect checks.
func TestLateChangesPassOnceSettled(t *testing.T) {
	simtest.Heavy(t)
	f, path := wideFleet(t, 4)
	subset := []string{"--check", "effect.*", "--check", "command.light-dimmer.*", "--check", "command.thermostat.mode.*",
		"--check", "update_name.*", "--check", "message.valid.*", "--check", "message.envelope.*", "--allow-partial"}
	t.Run("serial", func(t *testing.T) {
		t.Parallel()
		r := gwconform(t, append([]string{"--target", lagging(t, f, 300*time.Millisecond), "--fleet", path, "--parallel", "1", "--fail-on", "should"}, subset...)...)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0\n%s\n%s", r.code, tail(r.stdout), r.stderr)
		}
		lines := settleLines(t, r.dir)
		l := strings.Join(lines["effect.command.light-dimmer.applied.json"], "; ")
		if !strings.Contains(l, "changed after 3") && !strings.Contains(l, "changed after 4") {
			t.Errorf("the applied check does not say the change took some 300 ms: %q", l)
		}
	})
	t.Run("parallel", func(t *testing.T) {
		t.Parallel()
		r := gwconform(t, "--target", lagging(t, f, 300*time.Millisecond), "--fleet", path, "--parallel", "4", "--fail-on", "should")
		if r.code != 0 || !strings.Contains(r.stdout, "4 workers") {
			t.Fatalf("exit %d, want 0 with 4 workers\n%s\n%s", r.code, tail(r.stdout), r.stderr)
		}
		// The progress counts every worker's checks: its last line
		// gives the total the summary counts.
		counts := regexp.MustCompile(`(?m)^\s*(?:MUST|SHOULD|INFO)\s+(\d+) checks`).FindAllStringSubmatch(r.stdout, -1)
		total := 0
		for _, c := range counts {
			n, _ := strconv.Atoi(c[1])
			total += n
		}
		last := regexp.MustCompile(`gwconform: (\d+)/(\d+) checks done`).FindAllStringSubmatch(r.stdout, -1)
		if len(last) == 0 || total == 0 {
			t.Fatalf("no progress line or summary counts:\n%s", r.stdout)
		}
		if l := last[len(last)-1]; l[2] != strconv.Itoa(total) {
			t.Errorf("the last progress line says %s/%s checks done; the summary counts %d checks:\n%s", l[1], l[2], total, r.stdout)
		}
	})
	// A slow device that also applies late: its valid requests are sent
	// concurrently, and the target may apply them in another order than
	// it answered them; the refusals' state checks that follow must not
	// take the late ones for their own change.
	t.Run("slow and late", func(t *testing.T) {
		t.Parallel()
		amp := f.Accounts[0].Gateways[0].Devices[1]
		if amp.Type != "Appliance Module Plus" {
			t.Fatalf("the demo fleet's second device is %s", amp.Type)
		}
		r := gwconform(t, "--target", laggingSlow(t, f, 300*time.Millisecond, amp.SN, 500*time.Millisecond), "--fleet", path,
			"--parallel", "1", "--fail-on", "should", "--check", "command.appliance-module-plus.*", "--allow-partial")
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "slow device") {
			t.Fatalf("exit %d, want 0 with the slow device named\n%s\n%s", r.code, tail(r.stdout), r.stderr)
		}
	})
	t.Run("read at once", func(t *testing.T) {
		t.Parallel()
		r := gwconform(t, "--target", lagging(t, f, 300*time.Millisecond), "--fleet", path, "--parallel", "1", "--settle", "0",
			"--check", "effect.command.light-dimmer.applied.*", "--allow-partial")
		if r.code != 1 {
			t.Fatalf("--settle 0: exit %d, want 1 (the change is not there yet)\n%s", r.code, tail(r.stdout))
		}
	})
}

// TestNeverAppliedChangesFailWithoutWaitingEachTime: the target answers
// success and never changes a thing. The run FAILs, says "never changed"
// in the report, and ends within 2 minutes: once a device has shown it
// does not settle, its later checks do not wait the whole settle time.
func TestNeverAppliedChangesFailWithoutWaitingEachTime(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	f := fleet.Demo()
	r := gwconform(t, "--target", lagging(t, f, -1), "--fail-on", "should")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	if r.took > 2*time.Minute {
		t.Errorf("the run took %s", r.took)
	}
	lines := settleLines(t, r.dir)
	never, skipped := 0, 0
	for _, ls := range lines {
		for _, l := range ls {
			switch {
			case strings.Contains(l, "never changed within 2s"):
				never++
			case strings.Contains(l, "not waited for"):
				skipped++
			}
		}
	}
	if never == 0 || skipped == 0 {
		t.Errorf("%d waits said never changed, %d were not waited for; want some of each", never, skipped)
	}
	t.Logf("a run against a target that never applies a change: %s (%d waits of 2s, %d not waited for)", r.took.Round(time.Second), never, skipped)
}

// TestExploreSettlesOnALateTarget: explore's model gives observed state
// the same settle time as run ("explore's model gives observed
// state the same settle time"). Against a target that applies every change
// 300 ms after answering, explore passes with the default --settle, and
// with --settle 0 the first read after a change disagrees with the model.
func TestExploreSettlesOnALateTarget(t *testing.T) {
	t.Parallel()
	f := fleet.Demo()
	target := lagging(t, f, 300*time.Millisecond)
	code, out, errs := exploreRun(t, "--target", target, "--operations", "150", "--seed", "3", "--report-dir", t.TempDir())
	if code != report.ExitPass {
		t.Fatalf("default --settle: exit %d, want %d\n%s\n%s", code, report.ExitPass, out, errs)
	}
	code, out, errs = exploreRun(t, "--target", target, "--operations", "150", "--seed", "3", "--settle", "0", "--shrink-time", "5s", "--report-dir", t.TempDir())
	if code != report.ExitFail || !strings.Contains(out+errs, "state") {
		t.Fatalf("--settle 0: exit %d, want %d with a state disagreement\n%s\n%s", code, report.ExitFail, out, errs)
	}
}
