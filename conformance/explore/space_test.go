package explore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
)

// spaceConfig is the model-based phase's configuration of explore, as
// gwconform run sets it (conformance/checks/modelphase.go).
func spaceConfig(seed int64, ops int) Config {
	return Config{Seed: seed, Operations: ops, ShrinkBudget: 5 * time.Second, Space: true, MinKept: 1, Latitudes: true,
		RestoreRound: true, MaxShrunk: 4, GoOn: true}
}

// TestSweepReachesTheWholeSpace: against the faithful simulator, the
// space groups reach every cell of every projection of the demo fleet's
// space within the phase's default budget, and nothing disagrees.
func TestSweepReachesTheWholeSpace(t *testing.T) {
	f := fleet.Demo()
	x := explorer(t, startSim(t, f), f, spaceConfig(7, 1000))
	x.cfg.Target.Reset = false // as gwconform run: no reset between sequences
	rep, err := x.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) > 0 {
		t.Fatalf("the faithful simulator disagrees:\n%s", rep.Summary())
	}
	dims := x.Coverage()
	if len(dims) != 3 {
		t.Fatalf("%d projections, want 3", len(dims))
	}
	for _, d := range dims {
		if d.Total == 0 || d.Reached != d.Total {
			t.Errorf("%s; not reached: %v", d, d.Missing)
		}
	}
	// An identifier of another account in every position of each
	// operation the fleet allows.
	for _, want := range []string{"send_command Light_Dimmer sn:other-account", "update_name Appliance_Module mac+sn:other-account",
		"send_message - api_key+myservice_id:other-account", "send_command Appliance_Module_Plus myservice_id:other-account"} {
		if x.cov.Origins[want] == 0 {
			t.Errorf("never sent: %s", want)
		}
	}
}

// buggy wraps gwsim's handler in one of the two bugs no fixed check
// caught: a command naming another account's device through the own
// gateway is refused and applied all the same (isolation), or a Relay2
// sent alone lands in Relay1.
func buggy(t *testing.T, f *fleet.Fleet, bug string) string {
	t.Helper()
	sim := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := sim.Server.Handler()
	field := func(body, name string) (string, bool) {
		re := regexp.MustCompile(`"` + name + `":\s*"?([^",}]*)"?|<` + name + `>([^<]*)</` + name + `>`)
		m := re.FindStringSubmatch(body)
		if m == nil {
			return "", false
		}
		return m[1] + m[2], true
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		if strings.HasSuffix(r.URL.Path, "/command") {
			mac, _ := field(body, "mac")
			sn, _ := field(body, "sn")
			key, _ := field(body, "api_key")
			_, one := field(body, "Relay1")
			_, two := field(body, "Relay2")
			switch {
			case bug == "isolation" && key == "demo-key" && mac == "a4c138f0e2b1" && sn == "fedcba9876543210fedcba9876543210":
				ts, _ := field(body, "timestamp")
				sign, _ := field(body, "sign")
				sum := md5.Sum([]byte("other-key" + "other-secret" + ts))
				other := body
				for _, kv := range [][2]string{{"demo-key", "other-key"}, {"5f3a9c0e1b2d4f6a8c0e1b2d", "6e4b0d1f2c3e5a7b9d1f2c3e"},
					{mac, "b5d249a1f3c2"}, {sign, hex.EncodeToString(sum[:])}} {
					other = strings.Replace(other, kv[0], kv[1], 1)
				}
				r2 := r.Clone(r.Context())
				r2.Body, r2.ContentLength = io.NopCloser(strings.NewReader(other)), int64(len(other))
				h.ServeHTTP(httptest.NewRecorder(), r2)
			case bug == "relay" && two && !one:
				body = strings.NewReplacer(`"Relay2"`, `"Relay1"`, "<Relay2>", "<Relay1>", "</Relay2>", "</Relay1>").Replace(body)
			}
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader([]byte(body))), int64(len(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSpaceFindsTheBugsNoCheckNamed: the two escaped bugs are each found,
// at the level of the rule they break, and shrunk to a few operations.
func TestSpaceFindsTheBugsNoCheckNamed(t *testing.T) {
	for _, c := range []struct {
		bug, level, keyOp string
	}{
		{"isolation", MUST, "sn:other-account"},
		{"relay", SHOULD, "Relay2 alone"},
	} {
		t.Run(c.bug, func(t *testing.T) {
			f := fleet.Demo()
			x := explorer(t, buggy(t, f, c.bug), f, spaceConfig(11, 1000))
			x.cfg.Target.Reset = false
			rep, err := x.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var found *Finding
			for _, fd := range rep.Findings {
				if fd.Level == c.level && fd.Disagreement != nil && fd.Disagreement.Op.IsRead() {
					found = fd
					break
				}
			}
			if found == nil {
				t.Fatalf("not found at %s:\n%s", c.level, rep.Summary())
			}
			if len(found.Ops) > 6 || !found.Reproducible {
				t.Errorf("shrunk to %d operations (reproducible %v):\n%s", len(found.Ops), found.Reproducible, rep.Summary())
			}
			needs := false
			for _, op := range found.Ops {
				needs = needs || op.Origin == c.keyOp || strings.Contains(op.Note, c.keyOp)
			}
			if !needs {
				t.Errorf("the shrunk sequence lacks the operation that shows the bug (%s):\n%s", c.keyOp, rep.Summary())
			}
		})
	}
}
