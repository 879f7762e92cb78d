package load

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// check-acks holds messages too: a load with an ack log tags each message
// so that it is one of a kind; against the simulator every acknowledged
// message is found once, in its worker's order; a target whose logs lose
// one, hold one twice or swap two is caught, each as a mismatch naming
// the gateway and the message; a capped log's oldest are counted as
// evicted, not lost.
func TestCheckAcksHoldsMessages(t *testing.T) {
	f := fleet.Generate(2, 2, 4)
	sim := startSim(t, f)
	var log syncBuffer
	res, err := Run(context.Background(), Config{Target: sim.URL(), Fleet: f, Requests: 400, Concurrency: 4,
		Mix: Mix{Command: 1, Message: 3}, Seed: 8, AckLog: &log})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	entries, err := ReadAckLog(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := MessageExpectations(entries)
	acked := 0
	for _, x := range want {
		acked += len(x.Acked)
		if x.Untagged != 0 {
			t.Errorf("%s: %d untagged messages", x.MAC, x.Untagged)
		}
	}
	if acked < 200 {
		t.Fatalf("%d acknowledged messages", acked)
	}
	rep, err := AckCheck{Target: sim.URL()}.CheckMessages(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 0 || rep.Messages != acked || rep.Gateways != len(want) || rep.Evicted != 0 {
		t.Fatalf("against the simulator: %+v", rep)
	}

	// A target that serves each gateway's log through spoil.
	var mu sync.Mutex
	var spoil func(mac string, msgs []map[string]any) ([]map[string]any, int)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mac := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/_sim/gateways/"), "/messages")
		resp, err := http.Get(sim.URL() + r.URL.Path)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		var msgs []map[string]any
		json.NewDecoder(resp.Body).Decode(&msgs)
		mu.Lock()
		msgs, total := spoil(mac, msgs)
		mu.Unlock()
		w.Header().Set("X-Total-Count", strconv.Itoa(total))
		json.NewEncoder(w).Encode(msgs)
	}))
	defer fake.Close()
	var victim string
	for mac, x := range want {
		if len(x.Acked) >= 4 {
			victim = mac
			break
		}
	}
	for name, c := range map[string]struct {
		spoil func(msgs []map[string]any) ([]map[string]any, int)
		want  string
		evict bool
	}{
		"lost": {func(m []map[string]any) ([]map[string]any, int) {
			return append(m[:1:1], m[2:]...), len(m) - 1
		}, "(absent)", false},
		"twice": {func(m []map[string]any) ([]map[string]any, int) { return append(m, m[0]), len(m) + 1 }, "present 2 times", false},
		"swapped": {func(m []map[string]any) ([]map[string]any, int) {
			// The same worker's two messages, swapped.
			w0, _, _ := messageTag(m[0]["message_value"].(string))
			for j := 1; j < len(m); j++ {
				if w, _, _ := messageTag(m[j]["message_value"].(string)); w == w0 {
					m[0], m[j] = m[j], m[0]
					break
				}
			}
			return m, len(m)
		}, "before it", false},
		"capped": {func(m []map[string]any) ([]map[string]any, int) { return m[1:], len(m) }, "", true},
	} {
		mu.Lock()
		spoil = func(mac string, msgs []map[string]any) ([]map[string]any, int) {
			if mac == victim {
				return c.spoil(msgs)
			}
			return msgs, len(msgs)
		}
		mu.Unlock()
		rep, err := AckCheck{Target: fake.URL}.CheckMessages(context.Background(), want)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.evict && (len(rep.Mismatches) != 0 || rep.Evicted != 1):
			t.Errorf("%s: %+v (want 1 evicted, no mismatch)", name, rep)
		case !c.evict && (len(rep.Mismatches) != 1 || rep.Mismatches[0].MAC != victim || rep.Mismatches[0].Got != c.want):
			t.Errorf("%s: %+v (want one mismatch on %s: %s)", name, rep.Mismatches, victim, c.want)
		}
	}
}
