package simulator_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestInterleavedCommandsSameDevice complements TestConcurrentRequests,
// whose commands to one device are serialized by the test: here many
// clients send commands to the same device at the same time, over HTTP,
// in both formats, to several devices of both accounts at once. Every
// command sets every field of its device to values no other command uses,
// so the final state names the one command it came from. It must be:
//
//   - whole: all fields from one command, never a mix of two;
//   - the last acknowledged: no other command was sent after that one's
//     acknowledgement (a command sent after another was acknowledged is
//     applied after it, so it would have to be the final state).
//
// And no request gets anything but 200.
func TestInterleavedCommandsSameDevice(t *testing.T) {
	t.Parallel()
	_, a := start(t, simulator.Options{})
	b := *a
	b.APIKey, b.Secret, b.Account, b.MAC = simtest.KeyB, simtest.SecretB, simtest.AccountB, simtest.MACB
	a2 := *a
	a2.MAC = simtest.MACA2

	type sent struct {
		fields   map[string]string // canonical field -> value sent
		sentAt   time.Time
		ackedAt  time.Time
		accepted bool
	}
	type target struct {
		c   *simtest.Client
		mac string
		sn  string
		typ *device.Type
		// command k's values, for k = 0, 1, ...
		values func(k int, rnd *rand.Rand) map[string]string
		mu     sync.Mutex
		sent   []*sent
	}
	onOff := []string{"On", "Off"}
	thermoVals := func(k int, rnd *rand.Rand) map[string]string {
		return map[string]string{
			"mode":          []string{"Auto", "Cool", "Heat", "Off"}[rnd.IntN(4)],
			"cooling_point": fmt.Sprintf("%.1f", -50+0.1*float64(k)),
			"heating_point": fmt.Sprintf("%.1f", 100-0.1*float64(k)),
			"fan":           []string{"On", "Auto"}[rnd.IntN(2)],
		}
	}
	plusVals := func(k int, rnd *rand.Rand) map[string]string {
		return map[string]string{"opt": fmt.Sprintf("w%d", k), "Relay1": onOff[rnd.IntN(2)], "Relay2": onOff[rnd.IntN(2)]}
	}
	dimVals := func(k int, _ *rand.Rand) map[string]string { return map[string]string{"dimming": fmt.Sprint(k + 1)} }
	targets := []*target{
		{c: a, mac: simtest.MACA, sn: simtest.SN('a', int(mustType(thermostat).ID)), typ: mustType(thermostat), values: thermoVals},
		{c: &b, mac: simtest.MACB, sn: simtest.SN('b', int(mustType(thermostat).ID)), typ: mustType(thermostat), values: thermoVals},
		{c: a, mac: simtest.MACA, sn: simtest.SN('a', int(mustType(plus).ID)), typ: mustType(plus), values: plusVals},
		{c: &b, mac: simtest.MACB, sn: simtest.SN('b', int(mustType(plus).ID)), typ: mustType(plus), values: plusVals},
		{c: &a2, mac: simtest.MACA2, sn: simtest.SN('c', 0), typ: mustType(dimmer), values: dimVals},
	}
	const workers, perWorker = 6, 12 // 72 commands per device: dimming stays within 1..100
	var wg sync.WaitGroup
	for ti, tg := range targets {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(seed, 11))
				for n := 0; n < perWorker; n++ {
					tg.mu.Lock()
					k := len(tg.sent)
					s := &sent{fields: tg.values(k, rnd)}
					tg.sent = append(tg.sent, s)
					tg.mu.Unlock()
					format := formats[rnd.IntN(2)]
					var fields []simtest.F
					for i := range tg.typ.Fields {
						f := &tg.typ.Fields[i]
						fields = append(fields, S(f.WireName(format), s.fields[f.Name]))
					}
					body := tg.c.Command(tg.sn, tg.typ.Name, fields...)
					s.sentAt = time.Now()
					r := tg.c.Send(device.SendCommand, format, body)
					s.ackedAt = time.Now()
					if r.Status != http.StatusOK {
						t.Errorf("%s %s: %s", tg.mac, tg.typ.Name, r)
						continue
					}
					s.accepted = true
				}
			}(uint64(ti*100 + w))
		}
	}
	wg.Wait()
	for _, tg := range targets {
		state := a.Device(tg.mac, tg.sn).State
		var from []int
		for k, s := range tg.sent {
			if s.accepted && sameState(tg.typ, state, s.fields) {
				from = append(from, k)
			}
		}
		if len(from) != 1 {
			t.Errorf("%s %s: the final state %v is the whole state of %d acknowledged commands, want exactly 1", tg.mac, tg.typ.Name, state, len(from))
			continue
		}
		last := tg.sent[from[0]]
		for k, s := range tg.sent {
			if s.accepted && s.sentAt.After(last.ackedAt) {
				t.Errorf("%s %s: the final state is command %d's, but command %d was sent after it was acknowledged", tg.mac, tg.typ.Name, from[0], k)
				break
			}
		}
	}
}

// sameState reports whether a state from the admin API holds exactly the
// values sent.
func sameState(typ *device.Type, state map[string]any, sent map[string]string) bool {
	for i := range typ.Fields {
		f := &typ.Fields[i]
		got, want := state[f.Name], canonical(f, sent[f.Name])
		if g, ok := got.(float64); ok {
			if w, ok := want.(float64); !ok || math.Abs(g-w) > 1e-9 {
				return false
			}
			continue
		}
		if got != want {
			return false
		}
	}
	return true
}
