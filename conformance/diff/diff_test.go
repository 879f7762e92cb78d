package diff

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// startSim starts gwsim in-process (test files may) and returns its URL;
// with wrap, behind that handler.
func startSim(t testing.TB, f *fleet.Fleet, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	if wrap == nil {
		return simtest.Start(t, simulator.Options{Fleet: f}).URL()
	}
	sim := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.DiscardHandler)})
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
		d := differ(t, side(t, startSim(t, f, nil), f), side(t, startSim(t, f, nil), f), Config{Seed: 1, Operations: 600, Clients: clients})
		rep, err := d.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Differences) != 0 || rep.Operations != 600 {
			t.Fatalf("%d clients: two copies of gwsim differ:\n%s", clients, rep.Summary())
		}
	}
}

func TestFindsAndShrinksADeviation(t *testing.T) {
	f := fleet.Demo()
	d := differ(t, side(t, startSim(t, f, nil), f), side(t, startSim(t, f, acceptsDimming101), f), Config{Seed: 2, Operations: 1000})
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

// TestBothFormats: one request in JSON and the same in XML, to gwsim and
// to gwsim that accepts a dimming of 101: each answer differs; a rename in
// either format leaves the same name on both sides.
func TestBothFormats(t *testing.T) {
	f := fleet.Demo()
	a, b := side(t, startSim(t, f, nil), f), side(t, startSim(t, f, acceptsDimming101), f)
	d := differ(t, a, b, Config{Seed: 1})
	acct := a.World.Accounts[0]
	var dimmer, other explore.WDevice
	mac := acct.Gateways[0].MAC
	for _, dv := range acct.Gateways[0].Devices {
		if dv.Type == "Light Dimmer" {
			dimmer = dv
		} else {
			other = dv
		}
	}
	for _, format := range []string{"json", "xml"} {
		base := explore.Op{Format: format, Account: acct.ID, Key: acct.Key, MAC: mac, Note: "valid"}
		bad := base
		bad.Kind, bad.SN, bad.Type, bad.Fields = explore.Command, dimmer.SN, dimmer.Type, []explore.KV{{Key: "dimming", Value: "101"}}
		rename := base
		rename.Kind, rename.SN, rename.Fields = explore.Rename, other.SN, []explore.KV{{Key: "name", Value: "Same " + format}}
		tr, err := d.execute(context.Background(), []explore.Op{rename, bad}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.diffs) != 1 || tr.diffs[0].Kind != "answer" || tr.diffs[0].Index != 1 || tr.diffs[0].Verdict != SideA {
			t.Errorf("%s: want one answer difference at the command, A right: %+v", format, tr.diffs)
		}
		if len(tr.diffs) > 0 && !strings.Contains(tr.diffs[0].A.Request, "<dimming>101</dimming>") == (format == "xml") {
			t.Errorf("%s: the exchange is not the request sent: %s", format, tr.diffs[0].A.Request)
		}
	}
}

var stateOpen = regexp.MustCompile(`"state":\s*\{`)

// stampsReads adds a value that changes at every read to a device's
// state, as a service that shows when it last heard from the device
// would: calibration learns it is noise.
func stampsReads(h http.Handler) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/devices/") {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.String()
		if rec.Code == 200 {
			body = stateOpen.ReplaceAllString(body, fmt.Sprintf(`"state":{"last_seen":"%d",`, n.Add(1)))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		io.WriteString(w, body)
	})
}

// TestCalibrationIgnoresNoise: a service whose device reads carry a value
// that changes at every read differs from gwsim in that value only;
// --calibrate learns it from two runs of that service alone, ignores it,
// and says so, while a real difference still shows.
func TestCalibrationIgnoresNoise(t *testing.T) {
	simtest.Heavy(t)
	f := fleet.Demo()
	noisy := func(h http.Handler) http.Handler { return stampsReads(h) }
	both := func(h http.Handler) http.Handler { return stampsReads(acceptsDimming101(h)) }
	for _, tc := range []struct {
		name      string
		calibrate bool
		wrap      func(http.Handler) http.Handler
		want      int // distinct differences
	}{
		{"without calibration the stamp differs", false, noisy, -1},
		{"calibrated, the stamp is noise", true, noisy, 0},
		{"calibrated, a real difference shows", true, both, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := side(t, startSim(t, f, tc.wrap), f), side(t, startSim(t, f, nil), f)
			rep, err := differ(t, a, b, Config{Seed: 3, Operations: 800, Calibrate: tc.calibrate, CalibrateOperations: 300}).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want < 0 && len(rep.Differences) == 0:
				t.Errorf("the stamp did not show as a difference:\n%s", rep.Summary())
			case tc.want >= 0 && len(rep.Differences) != tc.want:
				t.Errorf("%d differences, want %d:\n%s", len(rep.Differences), tc.want, rep.Summary())
			}
			if tc.calibrate {
				ok := false
				for _, ig := range rep.Ignored {
					ok = ok || strings.Contains(ig.What, "last_seen") && strings.Contains(ig.Why, "two runs")
				}
				if !ok || !strings.Contains(rep.Summary(), "ignored: the state key last_seen") {
					t.Errorf("the report does not say last_seen was ignored and why:\n%s", rep.Summary())
				}
			}
		})
	}
}

// TestProbeOpenKeepsARealDifference: A reads every open form by refusing
// it (gwsim's default), B by accepting it and also accepts a dimming of
// 101. Without ProbeOpen the generator sends no open form and only the
// dimming shows; with it, the open forms show too, each judged both
// allowed, and the dimming of 101 is still a difference the rule table
// sides with A on: an open form never masks a real one.
func TestProbeOpenKeepsARealDifference(t *testing.T) {
	simtest.Heavy(t)
	f := fleet.Demo()
	start := func(o device.OpenForms, wrap func(http.Handler) http.Handler) string {
		sim := simulator.New(simulator.Options{Fleet: f, OpenForms: o, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		srv := httptest.NewServer(wrap(sim.Server.Handler()))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a, b := start(device.RefuseOpen, func(h http.Handler) http.Handler { return h }), start(device.AcceptOpen, acceptsDimming101)
	for _, probe := range []bool{false, true} {
		d := differ(t, side(t, a, f), side(t, b, f), Config{Seed: 5, Operations: 1500, ProbeOpen: probe, ShrinkBudget: 3 * time.Second})
		rep, err := d.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		dimming, open := false, 0
		for _, x := range rep.Differences {
			switch {
			case x.Rule == "API-2.3.dimming" && x.Kind == "answer" && x.Verdict == SideA && x.Op.Note != "" && !strings.HasSuffix(x.Op.Note, "(open)"):
				dimming = true
			case x.Verdict == BothSides && strings.Contains(x.VerdictWhy, "Open form") && strings.HasSuffix(x.Op.Note, "(open)"):
				open++
			default:
				t.Errorf("probe-open %v: %s %s %s: verdict %s (%s), op %q", probe, x.Rule, x.Operation, x.Kind, x.Verdict, x.VerdictWhy, x.Op.Note)
			}
		}
		if !dimming {
			t.Errorf("probe-open %v: the dimming of 101 was not found on A's side:\n%s", probe, rep.Summary())
		}
		if probe && open == 0 || !probe && open != 0 {
			t.Errorf("probe-open %v: %d open-form differences\n%s", probe, open, rep.Summary())
		}
	}
}
