package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/checks"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestModelPhaseFindsAndReplays: against gwsim with the isolation bug no
// fixed check caught (a command naming another account's device through
// the tested gateway, refused 404 and applied all the same), the run's
// model-based phase fails model.isolation at MUST with the sentence it
// rests on, report.json records the phase's seed, budget, coverage and
// shrunk sequence, and gwconform replay report.json model.isolation runs
// that sequence again and reproduces it.
func TestModelPhaseFindsAndReplays(t *testing.T) {
	if testing.Short() {
		// Beside the other short tests; its suite-level cases (make
		// test-heavy) keep to their place in the order.
		t.Parallel()
	}
	d := deviations["applies-command-to-other-accounts-device"]
	url := inProcessSim(t, device.RefuseOpen, func(h http.Handler) http.Handler { return deviant(h, &d) })
	r := gwconform(t, "--target", url, "--check", "model.*", "--allow-partial", "--seed", "3")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, tail(r.stdout))
	}
	doc, err := loadReport(filepath.Join(r.dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, ok := doc.Result("model.isolation")
	if !ok || res.Outcome != report.Failed || res.Level != "MUST" {
		t.Fatalf("model.isolation: %+v", res)
	}
	for _, want := range []string{"API-5.account-gateways", "A key acts only on its own account's gateways", "isolation: sn of another account's device"} {
		if !strings.Contains(res.Failure, want) {
			t.Errorf("the failure does not say %q:\n%s", want, res.Failure)
		}
	}
	for _, id := range []string{"model.answers", "model.effects", "model.contract"} {
		if res, _ := doc.Result(id); res.Outcome != report.Passed {
			t.Errorf("%s: %s, want passed: %s", id, res.Outcome, res.Failure)
		}
	}
	m := doc.Model
	if m == nil || m.Seed != 3 || m.BudgetOperations != 1000 || m.BudgetSeconds <= 0 || len(m.Coverage) != 3 || len(m.Findings) != 1 {
		t.Fatalf("report.json's model phase: %+v", m)
	}
	if f := m.Findings[0]; f.Check != "model.isolation" || len(f.Operations) > 4 || !f.Reproducible || len(f.Sequence) == 0 {
		t.Errorf("finding: %+v", f)
	}
	for _, c := range m.Coverage {
		if c.Reached != c.Total {
			t.Errorf("coverage %s: %d of %d", c.Name, c.Reached, c.Total)
		}
	}
	var out, errb bytes.Buffer
	code := replayCmd(context.Background(), []string{filepath.Join(r.dir, "report.json"), "model.isolation", "--target", url}, &out, &errb)
	if code != report.ExitPass || !strings.Contains(out.String(), "REPRODUCED") {
		t.Errorf("replay: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// simWith is gwsim with opts (the demo fleet, quiet), each answer passed
// through wrap, served over HTTP.
func simWith(t *testing.T, opts simulator.Options, wrap func(h http.Handler) http.Handler) string {
	t.Helper()
	opts.Fleet, opts.Logger = fleet.Demo(), slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(wrap(simulator.New(opts).Server.Handler()))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ownWords answers every error of h with a code the texts do not name,
// no field, and a message of its own, in the request's format.
func ownWords(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.String()
		if rec.Code != http.StatusOK {
			if strings.Contains(rec.Header().Get("Content-Type"), "xml") {
				body = `<?xml version="1.0" encoding="UTF-8"?><xml><status>error</status><error><code>E` + strconv.Itoa(rec.Code) + `</code><message>nein</message></error></xml>`
			} else {
				body = `{"status":"error","error":{"code":"E` + strconv.Itoa(rec.Code) + `","message":"nein"}}`
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.Header().Set("Connection", "close") // and a connection closed after every answer
		w.WriteHeader(rec.Code)
		io.WriteString(w, body)
	})
}

// TestModelPhaseFairToEveryLatitude: the phase passes, at --fail-on
// should, every faithful service CONTRACT's preamble allows: one that
// refuses replays, one that shows changes 300 ms after its answers, one
// that keeps only a gateway's newest message, one that words its errors
// its own way with codes the texts do not name and closes the connection
// after each answer, and one that sheds every fifth request with 429 and
// Retry-After.
func TestModelPhaseFairToEveryLatitude(t *testing.T) {
	simtest.Heavy(t)
	as := func(h http.Handler) http.Handler { return h }
	var n atomic.Int64
	shedding := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && n.Add(1)%5 == 0 {
				w.Header().Set("Retry-After", "0")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"status":"error","error":{"code":"rate_limited","message":"slow down"}}`)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	for _, c := range []struct {
		name string
		url  func() string
		// ops is the least the phase sends in its 10 s: a target that
		// shows each change 300 ms late makes each read after one wait.
		ops int
	}{
		{"refuses-replays", func() string { return simWith(t, simulator.Options{RejectReplays: true}, as) }, 500},
		{"applies-late", func() string { return lagging(t, fleet.Demo(), 300*time.Millisecond) }, 30},
		{"keeps-one-message", func() string { return simWith(t, simulator.Options{MessageLimit: 1}, as) }, 500},
		{"own-words", func() string { return simWith(t, simulator.Options{}, ownWords) }, 500},
		{"sheds-429", func() string { return simWith(t, simulator.Options{}, shedding) }, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := gwconform(t, "--target", c.url(), "--check", "model.*", "--fail-on", "should", "--allow-partial", "--seed", "5")
			doc, err := loadReport(filepath.Join(r.dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{checks.ModelAnswersID, checks.ModelEffectsID, checks.ModelIsolationID, checks.ModelContractID} {
				if res, _ := doc.Result(id); res.Outcome != report.Passed {
					t.Errorf("%s: %s: %s", id, res.Outcome, res.Failure)
				}
			}
			if doc.Model == nil || doc.Model.Operations < c.ops {
				t.Errorf("the phase ran %+v", doc.Model)
			}
		})
	}
}
