package cassette_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/fixtures/sampleapp"
	apiclient "github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/cassette"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// withoutThermostat is the demo fleet whose gateway has no Thermostat:
// the "real service" answers 404 where a fresh gwsim would answer 200, so
// a replayed answer is told from a simulated one.
func withoutThermostat() *fleet.Fleet {
	f := fleet.Demo()
	g := &f.Accounts[0].Gateways[0]
	var keep []fleet.Device
	for _, d := range g.Devices {
		if d.Type != "Thermostat" {
			keep = append(keep, d)
		}
	}
	g.Devices = keep
	return f
}

func client(t *testing.T, base string) (*simtest.Client, *fleet.Target) {
	target, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, base)
	c.APIKey, c.Secret, c.Account, c.MAC = target.Key.Key, target.Key.Secret, target.AccountID, target.MAC
	return c, target
}

// TestRecordThenReplayOffline records a session through gwsim proxy in
// front of one target, stops the target, and replays it with gwsim serve
// --replay: recorded requests get the recorded answers, however they are
// signed, everything else is simulated, and a wrong sign is not let
// through by a recording.
func TestRecordThenReplayOffline(t *testing.T) {
	dir := t.TempDir()
	up := simtest.Start(t, simulator.Options{Fleet: withoutThermostat()})
	w, err := cassette.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The fleet: the proxy records an answer only to a request whose
	// credentials it checked (without one, only successes).
	p, err := proxy.New(proxy.Config{Upstream: up.URL(), Record: w, Fleet: withoutThermostat(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	// The session: the sample app in both formats (its thermostat command
	// is answered 404 by this target), and a 400.
	for _, f := range []device.Format{device.JSON, device.XML} {
		if _, err := sampleapp.Run(context.Background(), sampleapp.Config{Target: p.URL(), Format: f}); err != nil {
			t.Fatal(err)
		}
	}
	c, target := client(t, p.URL())
	dimmer := target.Devices["Light Dimmer"].SN
	c.Send(device.SendCommand, device.JSON, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "0"))).
		Fail(t, device.JSON, http.StatusBadRequest, device.CodeInvalidField, "dimming")
	p.Close()
	up.Close() // offline from here on

	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if w.Recorded() < 13 || len(files) != 13 { // 6 requests in each format, and the 400
		t.Fatalf("recorded %d, %d files", w.Recorded(), len(files))
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range []string{target.Key.Key, target.Key.Secret, `"sign"`, `"timestamp"`, `"api_key"`} {
			if strings.Contains(string(b), s) {
				t.Fatalf("%s carries %s", f, s)
			}
		}
	}

	player, err := cassette.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	player.Auth = fleet.Demo().Authenticator()
	sim := simtest.Start(t, simulator.Options{Fleet: fleet.Demo(), WrapOperations: player.Wrap, ReplayNote: "replay mode: test"})
	c, _ = client(t, sim.URL())
	thermo := target.Devices["Thermostat"].SN
	for _, f := range []device.Format{device.JSON, device.XML} {
		point := map[device.Format]string{device.JSON: "heating point", device.XML: "heating_point"}[f]
		// Recorded (signed now, not when recorded): the recorded 404.
		r := c.Send(device.SendCommand, f, c.Command(thermo, "Thermostat", simtest.S("mode", "Heat"), simtest.S(point, "21.5")))
		r.Fail(t, f, http.StatusNotFound, device.CodeDeviceNotFound, "sn")
		if r.Header.Get("X-Gwsim-Replayed") != "true" {
			t.Errorf("%s: not marked as replayed: %v", f, r.Header)
		}
		// Not recorded (another value): simulated, and this fleet has it.
		c.Send(device.SendCommand, f, c.Command(thermo, "Thermostat", simtest.S("mode", "Cool"))).OK(t, f)
		// Recorded, but with a wrong sign: the simulator's 401.
		bad := *c
		bad.Secret = "wrong"
		bad.Send(device.SendCommand, f, bad.Command(thermo, "Thermostat", simtest.S("mode", "Heat"), simtest.S(point, "21.5"))).
			Fail(t, f, http.StatusUnauthorized, device.CodeBadSignature, "sign")
	}
	c.Send(device.SendCommand, device.JSON, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "0"))).
		Fail(t, device.JSON, http.StatusBadRequest, device.CodeInvalidField, "dimming")
	if player.Played() != 3 {
		t.Errorf("played %d, want 3", player.Played())
	}
	if st := c.Device(c.MAC, thermo).State; st["mode"] != "Cool" {
		t.Errorf("thermostat state %v: the simulated command should have applied, the replayed one not", st)
	}

	// The journal holds the replayed answers too, marked, each openable
	// to its request and answer with the key masked and no sign; the
	// dashboard says replay mode is on.
	var journal []server.Entry
	c.AdminJSON(http.MethodGet, "/_sim/journal", "", &journal)
	replayed := 0
	for _, e := range journal {
		if e.ID == 0 {
			t.Errorf("journal entry without id: %+v", e)
		}
		if !e.Replayed {
			continue
		}
		replayed++
		if e.SN == "" || e.App != apiclient.MaskAPIKey(target.Key.Key) {
			t.Errorf("replayed entry %+v: want its sn and its app (masked key)", e)
		}
		var x server.ExchangeView
		c.AdminJSON(http.MethodGet, "/_sim/journal/"+strconv.FormatUint(e.ID, 10), "", &x)
		if !strings.Contains(x.Request, apiclient.SignMarker) && !strings.Contains(x.Request, "&lt;SIGNATURE&gt;") ||
			strings.Contains(x.Request, target.Key.Key) || strings.Contains(x.Answer, target.Key.Key) || x.Status != e.Status || x.Answer == "" {
			t.Errorf("replayed exchange %+v", x)
		}
	}
	if replayed != 3 || len(journal) != 7 {
		t.Errorf("journal: %d entries, %d replayed; want 7 and 3: %+v", len(journal), replayed, journal)
	}
	var data server.DashboardData
	c.AdminJSON(http.MethodGet, "/_sim/dashboard/data", "", &data)
	if data.Replay != "replay mode: test" || data.Names[c.MAC+"/"+thermo] == "" {
		t.Errorf("dashboard data: replay %q, names %v", data.Replay, data.Names)
	}
}

func TestLoadRefusesBadCassettes(t *testing.T) {
	if _, err := cassette.Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing directory was accepted")
	}
	for _, body := range []string{`{`, `{"operation":"command"}`, `{"operation":"command","format":"json","answer":{"status":200},"extra":1}`} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "x.json"), []byte(body), 0o644)
		if _, err := cassette.Load(dir); err == nil {
			t.Errorf("%s was accepted", body)
		}
	}
}

// TestRequestLeavesCredentialsOut: the key of a request is the same
// however it is signed, and an answer that echoes the api_key or the sign
// is scrubbed of both.
func TestRequestLeavesCredentialsOut(t *testing.T) {
	c, target := client(t, "http://127.0.0.1:1")
	early := c.EnvelopeAt(time.Now().Add(-time.Minute))
	fields := []simtest.F{simtest.S("sn", target.Devices["Light Dimmer"].SN), simtest.S("type", "Light Dimmer"), simtest.N("dimming", "5")}
	var keys []string
	for _, env := range [][]simtest.F{early, c.Envelope()} {
		for _, f := range []device.Format{device.JSON, device.XML} {
			e, cred, ok := cassette.Request(device.SendCommand.Path(), simtest.ContentType(f), simtest.Body(f, append(env, fields...)))
			if !ok || cred.APIKey != target.Key.Key || len(cred.Sign) != 32 {
				t.Fatalf("%v %+v", ok, cred)
			}
			if _, has := e.Fields["sign"]; has || e.Fields["api_key"] != "" || e.Fields["timestamp"] != "" {
				t.Errorf("fields %v", e.Fields)
			}
			echoed := cred.Scrub(`{"error":{"message":"key ` + cred.APIKey + ` sign ` + cred.Sign + `"}}`)
			if strings.Contains(echoed, cred.APIKey) || strings.Contains(echoed, cred.Sign) {
				t.Errorf("scrubbed: %s", echoed)
			}
			keys = append(keys, e.Key())
		}
	}
	if keys[0] != keys[2] || keys[1] != keys[3] || keys[0] == keys[1] {
		t.Errorf("keys %v: want one per format, whatever the timestamp and sign", keys)
	}
	if _, _, ok := cassette.Request("/elsewhere", "application/json", []byte(`{}`)); ok {
		t.Error("a path that is no operation was read")
	}
}

// TestRecordReplacesPlantedSymlinks: symlinks planted at an entry's name
// and at the temporary name older versions used (name + ".tmp") do not
// make the recorder write through them.
func TestRecordReplacesPlantedSymlinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	w, err := cassette.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := cassette.Entry{Operation: "send_command", Format: "json", Fields: map[string]string{"sn": "x"},
		Answer: cassette.Answer{Status: 200, ContentType: "application/json", Body: `{"status":"success"}`}}
	name := filepath.Join(dir, e.Key()+".json")
	os.Symlink(victim, name)
	os.Symlink(victim, name+".tmp")
	if err := w.Record(e); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the recorder wrote through a planted symlink: %q", b)
	}
	if st, err := os.Lstat(name); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("%s: %v %v", name, st, err)
	}
	if p, err := cassette.Load(dir); err != nil || p.Len() != 1 {
		t.Errorf("the recorded cassette: %v", err)
	}
}
