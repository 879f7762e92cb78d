package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Put back after any interruption, at any concurrency: gwconform run (a
// real process) against a double some milliseconds away, so that checks
// run ahead of their place, gets SIGINT or SIGTERM at a random moment;
// once it has ended, every device of the double is as it was before the
// run, or the console and the report name each one left changed with its
// state before.

// snapshot is every device of the double: gateway/sn -> name and state.
func (t *indepTarget) snapshot() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]string{}
	for mac, g := range t.gateways {
		for sn, d := range g.devices {
			keys := make([]string, 0, len(d.state))
			for k := range d.state {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var b strings.Builder
			fmt.Fprintf(&b, "name %q", d.name)
			for _, k := range keys {
				fmt.Fprintf(&b, ", %s %v", k, d.state[k])
			}
			out[mac+"/"+sn] = b.String()
		}
	}
	return out
}

// far serves h after a delay, as a target across a network.
func far(tb testing.TB, h http.HandlerFunc, delay time.Duration) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		h(w, r)
	}))
	tb.Cleanup(s.Close)
	return s.URL
}

func TestInterruptedRunsPutEveryDeviceBack(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	fleetFile := indepFleetFile(t, indepKey, indepSecret)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i, c := range []struct {
		sig         syscall.Signal // 0: the suite's timeout ends the run
		concurrency string
	}{
		{syscall.SIGINT, ""}, {syscall.SIGTERM, ""}, {syscall.SIGINT, "1"}, {syscall.SIGTERM, "16"}, {syscall.SIGINT, "4"}, {0, ""},
	} {
		it := newIndepTarget(indepDeviation{})
		api := far(t, it.api, 6*time.Millisecond)
		reads := far(t, it.reads, 2*time.Millisecond)
		before := it.snapshot()
		dir := t.TempDir()
		args := []string{"run", "--target", api, "--observer", reads, "--fleet", fleetFile, "--report-dir", dir, "--color", "never"}
		if c.concurrency != "" {
			args = append(args, "--concurrency", c.concurrency)
		}
		at := time.Duration(500+rng.Intn(4000)) * time.Millisecond
		if c.sig == 0 {
			// Late enough that the first stretch run ahead has ended.
			at = 4 * time.Second
			args = append(args, "--ginkgo.timeout", at.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, bins.gwconform, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if c.sig != 0 {
			time.Sleep(at)
			cmd.Process.Signal(c.sig)
		}
		err := cmd.Wait()
		cancel()
		after := it.snapshot()
		console := out.String()
		name := fmt.Sprintf("run %d (%v after %v, concurrency %q)", i, c.sig, at, c.concurrency)
		t.Logf("%s: %v; %s; %s; %s", name, err, lineWith(console, "Conformance of "), lineWith(console, "MUST  "), lineWith(console, "run ahead:"))
		if c.sig == 0 {
			// The checks that ran ahead keep their results: not "1
			// passed, 4698 not reached".
			if d := readIndepDoc(t, dir); d.Summary.Passed < 1000 {
				t.Errorf("%s: %d checks passed in the report; the checks run ahead lost their results\n%s", name, d.Summary.Passed, tail(console))
			}
		}
		for k, b := range before {
			if a := after[k]; a != b {
				sn := k[strings.Index(k, "/")+1:]
				if !strings.Contains(console, sn) || !strings.Contains(console, "left changed") {
					t.Errorf("%s: %s was %s before the run, %s after it, and the console does not name it:\n%s", name, k, b, a, tail(console))
				}
			}
		}
		if t.Failed() {
			return
		}
	}
}

// TestUnmeantChangesReportedAndPutBack: a target whose commands also set
// the device of the same type on the account's other gateway changes a
// device no check meant to change; the run reads the fleet's devices
// before its first check, finds it changed at the end, puts it back and
// names it, with its state before, in the console and report.json.
func TestUnmeantChangesReportedAndPutBack(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	it := newIndepTarget(indepDeviation{commandElsewhere: true})
	api, reads := it.serve(t)
	before := it.snapshot()
	r := gwconform(t, "--target", api, "--observer", reads, "--fleet", indepFleetFile(t, indepKey, indepSecret),
		"--check", "command.light-dimmer.valid.json", "--allow-partial")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	// Each device is as it was, or named with its state before: putting
	// one back sets the other too on this target.
	for k, b := range before {
		if a := it.snapshot()[k]; a != b && !strings.Contains(r.stdout, k[strings.Index(k, "/")+1:]) {
			t.Errorf("%s was %s before the run, %s after it, and the console does not name it", k, b, a)
		}
	}
	const other = "22222222222222222222222222222201"
	line := lineWith(r.stdout, other)
	if !strings.Contains(line, "changed though no check's change was meant for it") || !strings.Contains(line, `name "Attic", dimming 10`) || !strings.Contains(line, "put back") {
		t.Errorf("the console does not name the device changed unasked, its state before, and that it was put back: %q\n%s", line, tail(r.stdout))
	}
	doc, err := loadReport(filepath.Join(r.dir, "report.json"))
	if err != nil || !strings.Contains(strings.Join(doc.LeftChanged, "\n"), other) {
		t.Errorf("report.json left_changed: %q (%v)", doc.LeftChanged, err)
	}
}
