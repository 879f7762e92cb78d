package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/simulator"
)

// The device fields of every type, as a body writes them: JSON members
// (with the comma before them) and XML elements.
var (
	jsonDeviceField = regexp.MustCompile(`,\s*"(?:io|opt|Relay1|Relay2|mode|cooling point|heating point|fan|code|dimming)"\s*:\s*(?:"(?:[^"\\]|\\.)*"|[-+0-9.eE]+)`)
	xmlDeviceField  = regexp.MustCompile(`<(?:io|opt|Relay1|Relay2|mode|cooling_point|heating_point|fan|code|dimming)>[^<]*</(?:io|opt|Relay1|Relay2|mode|cooling_point|heating_point|fan|code|dimming)>`)
	bodySN          = regexp.MustCompile(`"sn"\s*:\s*"([0-9A-Fa-f]+)"|<sn>([0-9A-Fa-f]+)</sn>`)
)

// firstFieldOnly is a command body with only its first device field.
func firstFieldOnly(body []byte) []byte {
	re := jsonDeviceField
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		re = xmlDeviceField
	}
	n := 0
	return re.ReplaceAllFunc(body, func(m []byte) []byte {
		if n++; n == 1 {
			return m
		}
		return nil
	})
}

// partlyAfterRefusal is gwsim with one bug: once a command to a device
// has been refused, the next valid command to that device applies only
// its first field (and answers success). Whether a command is valid is
// asked of a second gwsim, which sees every command and keeps no state
// that validity depends on.
func partlyAfterRefusal(t *testing.T) string {
	t.Helper()
	quiet := simulator.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	sim, shadow := simulator.New(quiet).Server.Handler(), simulator.New(quiet).Server.Handler()
	var mu sync.Mutex
	refused := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		defer mu.Unlock()
		send := func(h http.Handler, b []byte) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			rr := r.Clone(r.Context())
			rr.Body, rr.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			h.ServeHTTP(rec, rr)
			return rec
		}
		var rec *httptest.ResponseRecorder
		switch r.URL.Path {
		case "/_sim/reset":
			clear(refused)
		case "/v1/services/gateway/command":
			sn := ""
			if m := bodySN.FindSubmatch(body); m != nil {
				sn = strings.ToLower(string(m[1]) + string(m[2]))
			}
			if refused[sn] && send(shadow, body).Code == http.StatusOK {
				delete(refused, sn)
				rec = send(sim, firstFieldOnly(body))
			} else if rec = send(sim, body); rec.Code != http.StatusOK {
				refused[sn] = true
			}
		}
		if rec == nil {
			rec = send(sim, body)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestFirstFieldOnly(t *testing.T) {
	for in, want := range map[string]string{
		`{"control":{"api_key":"k","sn":"ab","type":"Thermostat","mode":"Cool","cooling point":21.5,"fan":"On"}}`: `{"control":{"api_key":"k","sn":"ab","type":"Thermostat","mode":"Cool"}}`,
		`<xml><control><sn>ab</sn><type>Thermostat</type><fan>On</fan><mode>Cool</mode></control></xml>`:          `<xml><control><sn>ab</sn><type>Thermostat</type><fan>On</fan></control></xml>`,
	} {
		if got := string(firstFieldOnly([]byte(in))); got != want {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
	}
}

// TestExploreFindsACommandPartlyAppliedAfterARefusal: explore, within its
// default budget of operations, finds a device whose next valid command
// after a refused one applies only its first field, and shrinks it to
// the refusal, the command and the read that shows it.
func TestExploreFindsACommandPartlyAppliedAfterARefusal(t *testing.T) {
	dir := t.TempDir()
	// The target applies what it applies before it answers: a read that
	// disagrees need not wait for a change to appear (--settle 0).
	code, out, errs := exploreRun(t, "--target", partlyAfterRefusal(t), "--seed", "3", "--settle", "0", "--report-dir", dir)
	if code != report.ExitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	ef, err := explore.ReadFile(filepath.Join(dir, explore.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	f := ef.Found
	if f == nil || !f.Reproducible || len(f.Ops) > 6 {
		t.Fatalf("finding %+v\n%s", f, out)
	}
	// The shrunk sequence: a refused command, then a valid one to the same
	// device, then the read that shows it applied in part.
	refusedAt, validAt := -1, -1
	last := f.Ops[len(f.Ops)-1]
	for i, op := range f.Ops {
		if op.Kind != explore.Command || op.SN != last.SN {
			continue
		}
		if op.Note != "valid" && refusedAt < 0 {
			refusedAt = i
		} else if op.Note == "valid" && refusedAt >= 0 && len(op.Fields) > 1 {
			validAt = i
		}
	}
	if last.Kind != explore.ReadDevice || refusedAt < 0 || validAt < refusedAt {
		t.Errorf("the shrunk sequence is not a refusal, a valid command and a read of that device:\n%s", out)
	}
	t.Logf("%s", out)
}
