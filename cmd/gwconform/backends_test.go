package main

import (
	"bytes"
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

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// backend is one kind of store gwsim serve keeps its state in (--store),
// and what it promises about a process killed with SIGKILL.
type backend struct {
	name string
	// store starts what the backend needs, if anything, for this test and
	// returns the --store URL.
	store func(t *testing.T) string
	// keeps: every change acknowledged before the kill is there after a
	// restart on the same store. Otherwise the restart serves the fleet
	// as its file has it, and no message.
	keeps bool
}

// backends are the --store kinds: a new backend adds a row.
var backends = []backend{
	{"memory", func(*testing.T) string { return "memory:" }, false},
	{"file", func(t *testing.T) string { return "file:" + filepath.Join(t.TempDir(), "state.db") }, true},
	{"redis", func(t *testing.T) string { return simtest.StartRedis(t, false).URL() }, true},
	{"redis+sentinel", func(t *testing.T) string { return simtest.StartSentinel(t).URL() }, true},
}

// TestEveryBackend runs, for each backend of the table, the whole
// conformance suite against gwsim serve started on it (with the admin
// observer: the .sim checks run too), expecting PASS; then the kill test
// on the same store: gwsim is killed with SIGKILL while clients send
// changes, started again on the store, and the state it serves is exactly
// what the backend promises.
func TestEveryBackend(t *testing.T) {
	simtest.Heavy(t)
	fl := filepath.Join(t.TempDir(), "fleet.yaml")
	fh, err := os.Create(fl)
	if err != nil {
		t.Fatal(err)
	}
	if err := simtest.Fleet().WriteYAML(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			start := time.Now()
			args := []string{"--fleet", fl, "--store", b.store(t)}
			conformOn(t, args, fl)
			conformed := time.Since(start)
			killOn(t, args, b.keeps)
			t.Logf("%s: conformance %s, kill test %s", b.name, conformed.Round(time.Millisecond), (time.Since(start) - conformed).Round(time.Millisecond))
		})
	}
}

// conformOn runs gwconform run against gwsim serve args: every check
// passes, the verdict is PASS and the simulator-only checks ran.
func conformOn(t *testing.T, args []string, fleetFile string) {
	t.Helper()
	p := simtest.Serve(t, bins.gwsim, args...)
	r := gwconform(t, "--target", p.URL, "--fleet", fleetFile)
	if r.code != 0 {
		t.Fatalf("gwconform: exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	doc := reports(t, r.dir)
	sim := 0
	for _, res := range doc.Results {
		if strings.HasSuffix(res.ID, ".sim") && res.Outcome == "passed" {
			sim++
		}
	}
	if doc.Verdict != "PASS" || len(failed(doc)) != 0 || sim < 100 {
		t.Fatalf("verdict %s, failed %v, %d simulator-only checks passed", doc.Verdict, failed(doc), sim)
	}
	if err := p.Interrupt(15 * time.Second); err != nil {
		t.Fatalf("gwsim did not stop cleanly after the run: %v\n%s", err, p.Stderr())
	}
}

// killOn starts gwsim serve args, has one client per gateway send changes
// (commands, names and messages, in both formats), kills gwsim with
// SIGKILL once each client has had some acknowledged, starts it again on
// the same store, and compares. With keeps, a device's state and name are
// either what its last acknowledged request left, or what the one request
// in flight would have left; a message log is the acknowledged messages,
// maybe followed by the one in flight. Without keeps, every device is as
// the fleet file has it and no gateway has a message.
func killOn(t *testing.T, args []string, keeps bool) {
	t.Helper()
	f := simtest.Fleet()
	proc := simtest.Serve(t, bins.gwsim, args...)
	initial := simtest.NewClient(t, proc.URL).State()
	var workers []*worker
	for ai, a := range f.Accounts {
		for gi, g := range a.Gateways {
			w := &worker{c: simtest.NewClient(t, proc.URL), http: &http.Client{Timeout: 10 * time.Second}, gw: g,
				acked: map[string]deviceModel{}, inFlight: map[string]deviceModel{}}
			w.c.APIKey, w.c.Secret, w.c.Account = a.APIKeys[0].Key, a.APIKeys[0].Secret, a.ID
			for _, d := range initial[ai].Gateways[gi].Devices {
				w.acked[d.SN] = deviceModel{state: d.State, name: d.Name}
			}
			workers = append(workers, w)
		}
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run()
		}()
	}
	// Kill once every client has had some changes acknowledged, while
	// all of them keep sending.
	deadline := time.Now().Add(20 * time.Second)
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
	inFlight, acks := 0, int64(0)
	for _, w := range workers {
		if w.failure != "" {
			t.Fatalf("gateway %s: %s", w.gw.MAC, w.failure)
		}
		if w.acks.Load() < 30 {
			t.Fatalf("gateway %s: only %d changes acknowledged in 20 s before the kill", w.gw.MAC, w.acks.Load())
		}
		inFlight += len(w.inFlight)
		if w.msgFly != "" {
			inFlight++
		}
		acks += w.acks.Load()
	}
	t.Logf("killed after %d acknowledged changes, %d in flight", acks, inFlight)

	after := simtest.NewClient(t, simtest.Serve(t, bins.gwsim, args...).URL).State()
	if len(after) != len(initial) {
		t.Fatalf("after the restart: %d accounts, want %d", len(after), len(initial))
	}
	k := 0
	for ai := range after {
		for gi, gv := range after[ai].Gateways {
			w := workers[k]
			k++
			if !keeps {
				if want := initial[ai].Gateways[gi]; !reflect.DeepEqual(gv.Devices, want.Devices) || len(gv.Messages) != 0 || gv.MessagesTotal != 0 {
					t.Errorf("gateway %s after the restart: %+v, %d messages (total %d); want the fleet as loaded, %+v, and none",
						gv.MAC, gv.Devices, len(gv.Messages), gv.MessagesTotal, want.Devices)
				}
				continue
			}
			for _, d := range gv.Devices {
				got := deviceModel{state: d.State, name: d.Name}
				want, maybe := w.acked[d.SN], w.inFlight[d.SN]
				if !reflect.DeepEqual(got, want) && (maybe.state == nil || !reflect.DeepEqual(got, maybe)) {
					t.Errorf("device %s: %+v after the restart, want the acknowledged %+v (or, in flight, %+v)", d.SN, got, want, maybe)
				}
			}
			// The log as it was before the clients sent (the conformance
			// run may leave messages), then theirs.
			before := initial[ai].Gateways[gi]
			var values, want []string
			for _, m := range before.Messages {
				want = append(want, m.Value)
			}
			want = append(want, w.msgs...)
			for i, m := range gv.Messages {
				if i >= len(before.Messages) && m.Type != "message" {
					t.Errorf("gateway %s: message %+v", gv.MAC, m)
				}
				values = append(values, m.Value)
			}
			if len(values) == len(want)+1 && w.msgFly != "" {
				want = append(want, w.msgFly)
			}
			if strings.Join(values, " ") != strings.Join(want, " ") || gv.MessagesTotal != before.MessagesTotal+uint64(len(values)-len(before.Messages)) {
				t.Errorf("gateway %s: messages %v (total %d) after the restart, want %v (in flight %q)",
					gv.MAC, values, gv.MessagesTotal, w.msgs, w.msgFly)
			}
		}
	}
}

// fullCommand sets every field of a device type to values drawn from n,
// and returns the fields to send in a format and the state the device
// then has, as the admin API shows it.
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

// run sends until the server stops answering, or answers other than 200.
func (w *worker) run() {
	for n := 0; ; n++ {
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
