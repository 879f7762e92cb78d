package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestStateFileRefused: a damaged or foreign state file, or one made for
// another fleet, stops gwsim serve with exit 2 and one line naming it, and
// the file is left byte for byte as it was.
func TestStateFileRefused(t *testing.T) {
	dir := t.TempDir()
	random := filepath.Join(dir, "random.db")
	junk := make([]byte, 32<<10)
	rand.Read(junk)
	os.WriteFile(random, junk, 0o644)

	foreign := filepath.Join(dir, "foreign.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("config"))
		if err != nil {
			return err
		}
		return b.Put([]byte("theme"), []byte("dark"))
	})
	db.Close()

	// A state file of a generated fleet, with a change in it.
	otherFleet := filepath.Join(dir, "other-fleet.db")
	url, _, cancel, exit := serve(t, "--seed", "5", "--state-file", otherFleet)
	g := fleet.Generate(5, 1, 6)
	tg, _ := g.Target()
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = tg.Key.Key, tg.Key.Secret, tg.AccountID, tg.MAC
	d := g.Accounts[0].Gateways[0].Devices[0]
	c.Send(device.UpdateName, device.JSON, append(c.Envelope(), simtest.S("sn", d.SN), simtest.S("name", "Kept"))).OK(t, device.JSON)
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d", code)
	}
	// The same fleet takes it back.
	url, _, cancel, exit = serve(t, "--seed", "5", "--state-file", otherFleet)
	if got := simtest.NewClient(t, url).Device(tg.MAC, d.SN).Name; got != "Kept" {
		t.Errorf("name %q after a restart", got)
	}
	cancel()
	<-exit

	for _, tc := range []struct {
		path, says string
		args       []string
	}{
		{random, "damaged or not a bbolt database", nil},
		{foreign, "other program", nil},
		{otherFleet, "another fleet", nil},
		{otherFleet, "another fleet", []string{"--seed", "6"}},
	} {
		before, _ := os.ReadFile(tc.path)
		code, stdout, stderr := run(append([]string{"serve", "--addr", "127.0.0.1:0", "--state-file", tc.path}, tc.args...)...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2", tc.path, code)
		}
		if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 ||
			!strings.Contains(stderr, tc.path) || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, "start fresh") {
			t.Errorf("%s: want one line naming the file, saying %q and how to start fresh, got %q", tc.path, tc.says, stderr)
		}
		if stdout != "" {
			t.Errorf("%s: printed %q", tc.path, stdout)
		}
		if after, _ := os.ReadFile(tc.path); !bytes.Equal(after, before) {
			t.Errorf("%s: the file was changed", tc.path)
		}
	}
}

// TestStateFileReset: POST /_sim/reset empties the state file too.
func TestStateFileReset(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.db")
	url, _, cancel, exit := serve(t, "--state-file", p)
	tg, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = tg.Key.Key, tg.Key.Secret, tg.AccountID, tg.MAC
	var fresh json.RawMessage
	c.AdminJSON("GET", "/_sim/state", "", &fresh)
	sn := tg.Devices["Light Dimmer"].SN
	c.Send(device.SendCommand, device.JSON, c.Command(sn, "Light Dimmer", simtest.S("dimming", "9"))).OK(t, device.JSON)
	c.Send(device.SendMessage, device.XML, append(c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", "a=1"))).OK(t, device.XML)
	c.Reset()
	cancel()
	<-exit
	url, _, _, _ = serve(t, "--state-file", p)
	var got json.RawMessage
	simtest.NewClient(t, url).AdminJSON("GET", "/_sim/state", "", &got)
	if !bytes.Equal(got, fresh) {
		t.Errorf("after reset and restart:\n%s\nwant the fleet as loaded:\n%s", got, fresh)
	}
}
