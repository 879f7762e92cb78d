package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// With an ack log, every request acknowledged is one line naming what it
// set, in order, with no api key, timestamp or sign; the simulator's final
// state is, for every device and field, the last acknowledged value.
func TestAckLogMatchesFinalState(t *testing.T) {
	f := fleet.Generate(2, 2, 6)
	sim := startSim(t, f)
	var log syncBuffer
	// Two URLs of one simulator, round-robin.
	res, err := Run(context.Background(), Config{Targets: []string{sim.URL(), sim.URL() + "/"}, Fleet: f, Requests: 600,
		Concurrency: 4, Mix: Mix{Command: 2, Message: 1, Rename: 2}, Seed: 5, AckLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Acknowledged != 600 || res.Unanswered != 0 || len(res.Targets) != 2 ||
		res.Targets[0].Requests != 300 || res.Targets[1].Requests != 300 {
		t.Fatalf("%d requests, %d errors, %d acknowledged, targets %+v", res.Requests, res.Errors, res.Acknowledged, res.Targets)
	}
	entries, err := ReadAckLog(strings.NewReader(log.String()))
	if err != nil || len(entries) != 600 {
		t.Fatalf("%d lines: %v", len(entries), err)
	}
	for _, a := range f.Accounts {
		for _, k := range a.APIKeys {
			if strings.Contains(log.String(), k.Key) || strings.Contains(log.String(), k.Secret) {
				t.Fatal("the ack log holds an api key or secret")
			}
		}
	}
	ops := map[string]int{}
	for i, e := range entries {
		ops[e.Op]++
		if e.Seq != int64(i+1) || e.Status != AckAcknowledged || e.MAC == "" || e.Account == "" || e.Target != sim.URL() {
			t.Fatalf("line %d: %+v", i+1, e)
		}
		switch e.Op {
		case "command":
			if e.SN == "" || e.Type == "" || len(e.Values) == 0 {
				t.Errorf("command line without device or values: %+v", e)
			}
			ty, _ := device.LookupType(e.Type)
			for k := range e.Values {
				if _, _, ok := ty.Field(k); !ok {
					t.Errorf("command line names %q, not a field of %s", k, e.Type)
				}
			}
		case "update_name":
			if e.SN == "" || e.Name == "" {
				t.Errorf("rename line without device or name: %+v", e)
			}
		case "message":
			if e.MessageType == "" || e.MessageValue == "" || e.SN != "" {
				t.Errorf("message line: %+v", e)
			}
		}
	}
	if ops["command"] == 0 || ops["update_name"] == 0 || ops["message"] == 0 {
		t.Errorf("operations in the ack log: %v", ops)
	}
	if strings.Contains(log.String(), `"sign"`) || strings.Contains(log.String(), "timestamp") {
		t.Error("the ack log holds a sign or timestamp")
	}
	want := Expectations(entries)
	if len(want) < 10 {
		t.Fatalf("only %d devices changed", len(want))
	}
	for _, x := range want {
		d, ok := sim.Store.Device(x.MAC, x.SN)
		if !ok {
			t.Fatalf("no device %s/%s", x.MAC, x.SN)
		}
		for _, m := range x.Mismatches(d.Name, d.State) {
			t.Error(m)
		}
	}
	// The check does catch a lost change.
	for _, x := range want {
		if len(x.Name) > 0 {
			if m := x.Mismatches("Another name", nil); len(m) == 0 {
				t.Error("Mismatches accepts a name that was never sent")
			}
			break
		}
	}
}

// Each device is owned by one worker: no two workers ever send to one
// device, so its requests are sequential.
func TestAckLogOwnsEachDeviceByOneWorker(t *testing.T) {
	f := fleet.Generate(1, 2, 5)
	p, err := newPlan(f, Mix{Command: 1, Rename: 1}, []device.Format{device.JSON})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]int{}
	for w := 0; w < 3; w++ {
		rng := newRNG(uint64(w))
		for range 200 {
			var r request
			if err := p.drawOwned(context.Background(), rng, time.Now(), &r, w, 3); err != nil {
				t.Fatal(err)
			}
			sn := field(r.fields, device.FieldSN)
			if o, ok := owner[sn]; ok && o != w {
				t.Fatalf("device %s drawn by workers %d and %d", sn, o, w)
			}
			owner[sn] = w
		}
	}
	if len(owner) != 10 {
		t.Errorf("%d of the 10 devices drawn", len(owner))
	}
	if _, err := Run(context.Background(), Config{Target: "http://127.0.0.1:1", Fleet: f, Requests: 1, Concurrency: 11, AckLog: &bytes.Buffer{}}); err == nil {
		t.Error("11 workers for 10 devices with an ack log: no error")
	}
}

func field(fs []kv, k string) string {
	for _, f := range fs {
		if f.Key == k {
			return f.Value
		}
	}
	return ""
}

// Of three targets, one refuses connections (nothing sent: no ack line)
// and one takes each request and closes without answering (sent, no
// answer: a no_answer line naming it): both count their errors and the
// load goes on to the one that answers, through each sender.
func TestTargetThatStopsAnswering(t *testing.T) {
	f := fleet.Generate(1, 1, 8)
	sim := startSim(t, f)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	mute := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
	}))
	defer mute.Close()
	for _, via := range vias {
		var log syncBuffer
		res, err := Run(context.Background(), Config{Targets: []string{sim.URL(), refused, mute.URL}, Fleet: f, Requests: 90,
			Concurrency: 3, Mix: Mix{Command: 1, Rename: 1}, Via: via, AckLog: &log})
		if err != nil {
			t.Fatal(err)
		}
		tr := res.Targets
		if len(tr) != 3 || tr[0].Requests != 30 || tr[0].Errors != 0 || tr[1].Errors != 30 || tr[1].NoAnswer != 30 ||
			tr[2].Errors != 30 || tr[2].NoAnswer != 30 || res.Errors != 60 || res.Acknowledged != 30 || res.Unanswered != 30 {
			t.Errorf("%s: targets %+v, %d errors, %d acknowledged, %d unanswered", via, tr, res.Errors, res.Acknowledged, res.Unanswered)
		}
		entries, _ := ReadAckLog(strings.NewReader(log.String()))
		for _, e := range entries {
			wantTarget := map[string]string{AckAcknowledged: sim.URL(), AckNoAnswer: mute.URL}[e.Status]
			if e.Target != wantTarget || (e.Status == AckNoAnswer && e.Error == "") {
				t.Errorf("%s: %+v", via, e)
			}
		}
		var out bytes.Buffer
		res.WriteText(&out)
		if !strings.Contains(out.String(), refused+": 30 requests, 30 errors (30 without an answer)") ||
			!strings.Contains(out.String(), "ack log     30 acknowledged, 0 uncertain (503), 30 sent without an answer") {
			t.Errorf("%s: result text:\n%s", via, out.String())
		}
	}
}

// Expectations: the last acknowledged value, or an unanswered one sent
// after it; an unanswered value followed by an acknowledgement is no
// longer allowed, nor is an older acknowledged one.
func TestExpectations(t *testing.T) {
	rename := func(status, name string) AckEntry {
		return AckEntry{Status: status, Op: "update_name", MAC: "m", SN: "s", Name: name}
	}
	command := func(status string, values map[string]string) AckEntry {
		return AckEntry{Status: status, Op: "command", MAC: "m", SN: "s", Values: values}
	}
	x := Expectations([]AckEntry{
		rename(AckAcknowledged, "old"),
		rename(AckNoAnswer, "lost"),
		rename(AckAcknowledged, "last"),
		rename(AckNoAnswer, "maybe"),
		command(AckNoAnswer, map[string]string{"mode": "Heat"}), // before any ack: not held
		command(AckAcknowledged, map[string]string{"mode": "Cool", "heating_point": "20"}),
		command(AckAcknowledged, map[string]string{"heating_point": "21.5"}),
		command(AckNoAnswer, map[string]string{"heating_point": "22"}),
		{Status: AckAcknowledged, Op: "message", MAC: "m", MessageType: "message", MessageValue: "v"},
	})["m/s"]
	if x == nil {
		t.Fatal("no expectation for m/s")
	}
	for _, c := range []struct {
		name  string
		state map[string]any
		ok    bool
	}{
		{"last", map[string]any{"mode": "Cool", "heating_point": 21.5}, true},
		{"maybe", map[string]any{"mode": "Cool", "heating_point": 22.0}, true},
		{"old", map[string]any{"mode": "Cool", "heating_point": 21.5}, false},
		{"lost", map[string]any{"mode": "Cool", "heating_point": 21.5}, false},
		{"last", map[string]any{"mode": "Heat", "heating_point": 21.5}, false},
		{"last", map[string]any{"mode": "Cool", "heating_point": 20}, false},
		{"last", map[string]any{"mode": "Cool"}, false},
	} {
		if m := x.Mismatches(c.name, c.state); (len(m) == 0) != c.ok {
			t.Errorf("%q %v: mismatches %q, want ok=%v", c.name, c.state, m, c.ok)
		}
	}
}

// dyingServer answers success to the first `answer` requests on one
// kept-alive connection, then dies, as how says: "mid" reads the next
// request and closes without answering (it may have applied it); "reset"
// does the same but resets the connection (as a server closing with bytes
// unread does); "idle" closes while the connection is idle (nothing after
// that was received). Either way it stops listening, so every later
// connection is refused.
func dyingServer(t *testing.T, answer int, how string) string {
	t.Helper()
	midRequest := how != "idle"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		// The listener closes before the connection does, so that the
		// client's retry, which follows the close at once, is refused
		// rather than taken into the backlog and reset.
		defer c.Close()
		defer ln.Close()
		br := bufio.NewReader(c)
		readRequest := func() bool {
			req, err := http.ReadRequest(br)
			if err != nil {
				return false
			}
			_, err = io.Copy(io.Discard, req.Body)
			return err == nil
		}
		for range answer {
			if !readRequest() {
				return
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(successJSON), successJSON)
		}
		if midRequest {
			readRequest()
		}
		if how == "reset" {
			c.(*net.TCPConn).SetLinger(0) // close sends RST
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

// A no_answer line is written for a request the target may have applied:
// one written to a connection that then closed without an answer. A
// request that never reached the target gets none: refused connections,
// and a kept-alive connection the target had closed before the request
// was written (found closed before writing, the request goes on a new
// connection, which is refused). The line's error says what happened to
// the attempt that may have been applied.
func TestNoAnswerOnlyForRequestsThatMayHaveBeenApplied(t *testing.T) {
	f := fleet.Generate(1, 1, 4)
	for _, via := range []string{ViaRaw, ViaHTTP} {
		for _, how := range []string{"idle", "mid", "reset"} {
			mid := how != "idle"
			var log syncBuffer
			target := dyingServer(t, 5, how)
			res, err := Run(context.Background(), Config{Target: target, Fleet: f, Requests: 12, Rate: 100,
				Concurrency: 1, Mix: Mix{Rename: 1}, Via: via, AckLog: &log, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			entries, err := ReadAckLog(strings.NewReader(log.String()))
			if err != nil {
				t.Fatal(err)
			}
			var acked, lost []AckEntry
			for _, e := range entries {
				if e.Status == AckAcknowledged {
					acked = append(acked, e)
				} else {
					lost = append(lost, e)
				}
			}
			wantLost := 0
			if mid {
				wantLost = 1
			}
			if len(acked) != 5 || len(lost) != wantLost || res.Requests != 12 || res.Errors != 7 || res.Unanswered != int64(wantLost) {
				t.Errorf("%s, dying %s: %d acked, no_answer %+v; %d requests, %d errors", via, how, len(acked), lost, res.Requests, res.Errors)
				continue
			}
			if mid {
				e := lost[0]
				// gwconform load's own sender reads a reset as a close;
				// net/http says "connection reset by peer".
				said := strings.Contains(e.Error, "closed") || via == ViaHTTP && how == "reset" && strings.Contains(e.Error, "connection reset")
				if !said || (via == ViaRaw && !strings.Contains(e.Error, "then the retry: dial connect: connection refused")) || e.Name == "" {
					t.Errorf("%s, dying %s: the no_answer line: %+v", via, how, e)
				}
			}
			// The target's outage is an event.
			if len(res.Events) != 1 || res.Events[0].Kind != EventStopped || res.Events[0].Target != target {
				t.Errorf("%s, dying %s: events %+v", via, how, res.Events)
			}
		}
	}
}
