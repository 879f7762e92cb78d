package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
	"github.com/gwdmi/gwtools/simulator/store"
)

// fullCommand sets every field of a device type to values drawn from n,
// and returns the fields to send in a format and the state the device then has, as the
// admin API shows it.
func fullCommand(typ *device.Type, format device.Format, n int) ([]simtest.F, map[string]any) {
	var fields []simtest.F
	state := map[string]any{}
	for _, f := range typ.Fields {
		var v string
		var shown any
		switch f.Kind {
		case device.Enum:
			v = f.Values[n%len(f.Values)]
			shown = v
		case device.Integer:
			i := int(f.Min) + n%int(f.Max-f.Min+1)
			v, shown = strconv.Itoa(i), float64(i)
		case device.Decimal:
			v = fmt.Sprintf("%.2f", f.Min+float64(n%int((f.Max-f.Min)*100))/100)
			shown, _ = strconv.ParseFloat(v, 64)
		case device.Text:
			v = fmt.Sprintf("v%d", n)
			shown = v
		}
		fields = append(fields, simtest.S(f.WireName(format), v))
		state[f.Name] = shown
	}
	return fields, state
}

type deviceModel struct {
	state map[string]any
	name  string
}

// worker drives one gateway alone, one request at a time, so that for each
// of its devices the order of changes is known: what was acknowledged, and
// at most one request in flight when the server died.
type worker struct {
	c        *simtest.Client
	http     *http.Client
	gw       fleet.Gateway
	acked    map[string]deviceModel // by sn
	inFlight map[string]deviceModel // the device as the request in flight would leave it
	msgs     []string               // acknowledged message values
	msgFly   string                 // the message in flight, if any
	acks     atomic.Int64
	failure  string
}

func (w *worker) run(stop <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		d := w.gw.Devices[(n/3)%len(w.gw.Devices)]
		typ, _ := device.LookupType(d.Type)
		w.c.MAC = w.gw.MAC
		var op device.Operation
		var fields []simtest.F
		after := w.acked[d.SN]
		format := device.Format(1 + n%2)
		msg := ""
		switch n % 3 {
		case 0:
			var cmd []simtest.F
			cmd, after.state = fullCommand(typ, format, n)
			op, fields = device.SendCommand, w.c.Command(d.SN, d.Type, cmd...)
		case 1:
			after.name = fmt.Sprintf("name %d", n)
			op, fields = device.UpdateName, append(w.c.Envelope(), simtest.S("sn", d.SN), simtest.S("name", after.name))
		case 2:
			msg = fmt.Sprintf("n=%d", n)
			op, fields = device.SendMessage, append(w.c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", msg))
		}
		res, err := w.http.Post(w.c.Base+op.Path(), simtest.ContentType(format), bytes.NewReader(simtest.Body(format, fields)))
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		switch {
		case err != nil: // the server died: this one may or may not have been applied
			if msg != "" {
				w.msgFly = msg
			} else {
				w.inFlight[d.SN] = after
			}
			return
		case res.StatusCode != http.StatusOK:
			w.failure = fmt.Sprintf("%s answered %d", op.Path(), res.StatusCode)
			return
		}
		if msg != "" {
			w.msgs = append(w.msgs, msg)
		} else {
			w.acked[d.SN] = after
		}
		w.acks.Add(1)
	}
}

// TestKillKeepsAcknowledgedChanges: gwsim serve --state-file, killed with
// SIGKILL under load from several clients, comes back with every change it
// acknowledged. A device's state and name are either what its last
// acknowledged request left, or what the one request in flight would have
// left; a message log is the acknowledged messages, maybe followed by the
// one in flight.
func TestKillKeepsAcknowledgedChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a process")
	}
	bin := simtest.Binary(t, "gwsim")
	state := filepath.Join(t.TempDir(), "state.db")
	args := []string{"--seed", "11", "--gateways", "6", "--devices-per-gateway", "5", "--state-file", state}
	f := fleet.Generate(11, 6, 5)
	tg, _ := f.Target()
	proc := simtest.Serve(t, bin, args...)
	url := proc.URL

	c := simtest.NewClient(t, url)
	var initial struct{ Accounts []store.AccountView }
	c.AdminJSON("GET", "/_sim/state", "", &initial)
	var workers []*worker
	for i, g := range f.Accounts[0].Gateways {
		w := &worker{c: simtest.NewClient(t, url), http: &http.Client{Timeout: 10 * time.Second}, gw: g,
			acked: map[string]deviceModel{}, inFlight: map[string]deviceModel{}}
		w.c.APIKey, w.c.Secret, w.c.Account = tg.Key.Key, tg.Key.Secret, tg.AccountID
		for _, d := range initial.Accounts[0].Gateways[i].Devices {
			w.acked[d.SN] = deviceModel{state: d.State, name: d.Name}
		}
		workers = append(workers, w)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(stop)
		}()
	}
	// Kill once every client has had some changes acknowledged, while
	// all of them keep sending.
	deadline := time.Now().Add(10 * time.Second)
	for {
		busy := 0
		for _, w := range workers {
			if w.acks.Load() >= 30 {
				busy++
			}
		}
		if busy == len(workers) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := proc.Cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	proc.Kill() // waits for it
	wg.Wait()
	close(stop)
	inFlight, acks := 0, int64(0)
	for _, w := range workers {
		if w.failure != "" {
			t.Fatalf("gateway %s: %s", w.gw.MAC, w.failure)
		}
		inFlight += len(w.inFlight)
		if w.msgFly != "" {
			inFlight++
		}
		acks += w.acks.Load()
	}
	t.Logf("killed after %d acknowledged changes, %d in flight", acks, inFlight)

	url = simtest.Serve(t, bin, args...).URL
	c = simtest.NewClient(t, url)
	var after struct{ Accounts []store.AccountView }
	c.AdminJSON("GET", "/_sim/state", "", &after)
	for i, w := range workers {
		gv := after.Accounts[0].Gateways[i]
		for _, d := range gv.Devices {
			got := deviceModel{state: d.State, name: d.Name}
			want, maybe := w.acked[d.SN], w.inFlight[d.SN]
			if !reflect.DeepEqual(got, want) && (maybe.state == nil || !reflect.DeepEqual(got, maybe)) {
				t.Errorf("device %s: %+v after the restart, want the acknowledged %+v (or, in flight, %+v)", d.SN, got, want, maybe)
			}
		}
		var values []string
		for _, m := range gv.Messages {
			if m.Type != "message" {
				t.Errorf("gateway %s: message %+v", gv.MAC, m)
			}
			values = append(values, m.Value)
		}
		want := w.msgs
		if len(values) == len(want)+1 && w.msgFly != "" {
			want = append(want, w.msgFly)
		}
		if strings.Join(values, " ") != strings.Join(want, " ") || gv.MessagesTotal != uint64(len(values)) {
			t.Errorf("gateway %s: messages %v (total %d) after the restart, want %v (in flight %q)",
				gv.MAC, values, gv.MessagesTotal, w.msgs, w.msgFly)
		}
	}
}

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
