package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/engine"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// farAway puts a target across a network: every request, the observer's
// reads among them, waits from min to max (seeded) before it is passed on.
func farAway(t *testing.T, target string, min, max time.Duration, seed int64) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	r := rand.New(rand.NewSource(seed))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		d := min + time.Duration(r.Int63n(int64(max-min)+1))
		mu.Unlock()
		time.Sleep(d)
		p.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestScheduledVerdictsEqualSerial: against targets across a network
// (answers after 6 to 12 ms), the run scheduled by what each check
// touches (the default --concurrency) gives every check the verdict the
// run that sends one request at a time (--concurrency 1) gives, with the
// same seed: a faithful gwsim, one with a bug in a refusal of each
// operation, one that asks now and then to retry, and one that applies
// each change 300 ms after its answer.
func TestScheduledVerdictsEqualSerial(t *testing.T) {
	simtest.Heavy(t)
	served := func(wrap func(h http.Handler) http.Handler) string { return inProcessSim(t, device.RefuseOpen, wrap) }
	as := func(h http.Handler) http.Handler { return h }
	buggy := refusalsAccepted
	var n atomic.Int64
	limiting := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && n.Add(1)%40 == 0 {
				w.Header().Set("Retry-After", "1")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"status":"error","error":{"code":"rate_limited","message":"slow down"}}`)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	subset := []string{"--check", "command.light-dimmer.*", "--check", "command.thermostat.mode.*", "--check", "message.envelope.*",
		"--check", "message.message_value.*", "--check", "update_name.name.*", "--allow-partial", "--seed", "77"}
	for _, c := range []struct {
		name   string
		target string
		failed []string
	}{
		{"faithful", served(as), nil},
		{"refusals accepted", served(buggy), []string{"command.light-dimmer.dimming.101.json", "update_name.name.too-long.xml.contract"}},
		{"asks to retry", served(limiting), nil},
		{"applies late", lagging(t, fleet.Demo(), 300*time.Millisecond), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			far := farAway(t, c.target, 6*time.Millisecond, 12*time.Millisecond, 7)
			serial := gwconform(t, append([]string{"--target", far, "--concurrency", "1"}, subset...)...)
			scheduled := gwconform(t, append([]string{"--target", far}, subset...)...)
			if serial.code > 1 || scheduled.code > 1 {
				t.Fatalf("exit %d serial, %d scheduled\n%s\n%s", serial.code, scheduled.code, tail(scheduled.stdout), scheduled.stderr)
			}
			so, sc := outcomesOf(t, serial.dir), outcomesOf(t, scheduled.dir)
			if len(so) < 500 || len(so) != len(sc) {
				t.Fatalf("%d results serial, %d scheduled", len(so), len(sc))
			}
			for id, o := range so {
				if sc[id] != o {
					t.Errorf("%s: %s serial, %s scheduled\nserial:\n%s\nscheduled:\n%s", id, o, sc[id], failureBlock(serial.stdout, id), failureBlock(scheduled.stdout, id))
				}
			}
			for _, id := range c.failed {
				if so[id] != "failed" {
					t.Errorf("%s: %s, want failed (the bug was not caught)", id, so[id])
				}
			}
			if c.failed == nil && (serial.code != 0 || scheduled.code != 0) {
				t.Errorf("a faithful target failed: exit %d serial, %d scheduled\n%s", serial.code, scheduled.code, tail(scheduled.stdout))
			}
			if !regexp.MustCompile(fmt.Sprintf(`critical path: .*up to %d requests in flight`, engine.DefaultConcurrency)).MatchString(scheduled.stdout) {
				t.Errorf("the scheduled run names no critical path:\n%s", tail(scheduled.stdout))
			}
			if !regexp.MustCompile(`run ahead: [1-9][0-9]+ checks in [2-9] chains side by side`).MatchString(scheduled.stdout) {
				t.Errorf("the scheduled run says nothing of the checks run ahead:\n%s", tail(scheduled.stdout))
			}
			if scheduled.took >= serial.took {
				t.Logf("scheduled %s, serial %s", scheduled.took, serial.took)
			}
		})
	}
}

// failureBlock is the console's block about a check, if it has one.
func failureBlock(out, id string) string {
	i := strings.Index(out, "["+id+"]")
	if i < 0 {
		return "(no block)"
	}
	j := strings.Index(out[i:], "report:")
	if j < 0 {
		j = len(out) - i
	}
	return out[i : i+j]
}

// inProcessSim is gwsim with the demo fleet, reading open forms as open says,
// behind wrap, through real HTTP.
func inProcessSim(t *testing.T, open device.OpenForms, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := simulator.New(simulator.Options{Fleet: fleet.Demo(), Logger: quiet, OpenForms: open}).Server.Handler()
	srv := httptest.NewServer(wrap(h))
	t.Cleanup(srv.Close)
	return srv.URL
}

// refusedByFaithful are requests every faithful target refuses: a
// dimming of 101, a message_value without its number, a name of 65
// characters.
var refusedByFaithful = regexp.MustCompile(`"dimming":"101"|<dimming>101</dimming>|"message_value":"brightness="|<message_value>brightness=</message_value>|"name":"n{65}"|<name>n{65}</name>`)

// refusalsAccepted is a target with a bug in a refusal of each
// operation: it accepts refusedByFaithful.
func refusalsAccepted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if refusedByFaithful.Match(body) {
			success(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// outcomesOf is each check's outcome in a report.
func outcomesOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err = expandReport(b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct{ ID, Outcome string } `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range doc.Results {
		out[r.ID] = r.Outcome
	}
	return out
}
