package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// wideFleet is the demo fleet with `per` devices of every type on the
// tested gateway, written to a file.
func wideFleet(t *testing.T, per int) (*fleet.Fleet, string) {
	t.Helper()
	f := fleet.Demo()
	g := &f.Accounts[0].Gateways[0]
	base := append([]fleet.Device(nil), g.Devices...)
	for k := 1; k < per; k++ {
		for i, d := range base {
			// Two letters at least, as the demo fleet's sns have: the
			// mixed-case checks of sn need some to mix.
			d.SN = fmt.Sprintf("fa%028x%02x", k, i)
			d.Name = fmt.Sprintf("%s %d", d.Name, k)
			g.Devices = append(g.Devices, d)
		}
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wide.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err = fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f, path
}

// TestParallelVerdictsEqualSerial: with the same seed, --parallel 4 gives
// every check the verdict a serial run gives, against a target with a
// deviation, and writes one report.
func TestParallelVerdictsEqualSerial(t *testing.T) {
	simtest.Heavy(t)
	f, path := wideFleet(t, 4)
	sim := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := sim.Server.Handler()
	deviant := regexp.MustCompile(`"dimming":"101"|<dimming>101</dimming>`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if deviant.Match(body) {
			success(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	outcomes := func(r result) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, res := range reports(t, r.dir).Results {
			out[res.ID] = res.Outcome
		}
		return out
	}
	serial := gwconform(t, "--target", srv.URL, "--fleet", path, "--seed", "4242", "--parallel", "1", "--allow-partial")
	par := gwconform(t, "--target", srv.URL, "--fleet", path, "--seed", "4242", "--parallel", "4", "--allow-partial")
	if !strings.Contains(par.stdout, "4 workers") {
		t.Fatalf("--parallel 4 did not start 4 workers:\n%s\n%s", tail(par.stdout), par.stderr)
	}
	if serial.code != 1 || par.code != 1 {
		t.Fatalf("exit codes: serial %d, parallel %d; want 1 and 1 (a deviation)", serial.code, par.code)
	}
	so, po := outcomes(serial), outcomes(par)
	if len(so) != len(po) || len(so) < 1900 {
		t.Fatalf("%d results serial, %d parallel", len(so), len(po))
	}
	failedN := 0
	for id, o := range so {
		if po[id] != o {
			t.Errorf("%s: %s serial, %s parallel", id, o, po[id])
		}
		if o == "failed" {
			failedN++
		}
	}
	if failedN == 0 || so["command.light-dimmer.dimming.101.json"] != "failed" {
		t.Errorf("the deviation was not caught (%d failed)", failedN)
	}
	// The merged JUnit lists the checks in the serial run's order.
	order := func(dir string) []string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range regexp.MustCompile(`<testcase name="([^"]*)"`).FindAllSubmatch(b, -1) {
			names = append(names, string(m[1]))
		}
		return names
	}
	if so, po := order(serial.dir), order(par.dir); len(so) < 1900 || strings.Join(so, "\n") != strings.Join(po, "\n") {
		for i := range so {
			if i < len(po) && so[i] != po[i] {
				t.Errorf("junit.xml: test case %d is %s serial, %s parallel", i, so[i], po[i])
				break
			}
		}
		t.Errorf("junit.xml: %d test cases serial, %d parallel, or not in the same order", len(so), len(po))
	}
	// A fleet with one device of a type runs one worker.
	one := gwconform(t, "--parallel", "4", "--check", "message.valid.*", "--allow-partial")
	if strings.Contains(one.stdout, "workers") || !strings.Contains(one.stderr, "so 1 worker(s) run") {
		t.Errorf("the demo fleet supports one worker:\n%s\n%s", one.stdout, one.stderr)
	}
}
