package simulator_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestConcurrentRequests sends commands from many goroutines over HTTP to
// the same and to different devices of two accounts, while others rename,
// send messages and read the state. Commands to one device are serialized
// by the test, so the last acknowledged one is known: the final state of
// every device must be exactly that.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	_, a := start(t, simulator.Options{})
	b := *a
	b.APIKey, b.Secret, b.Account, b.MAC = simtest.KeyB, simtest.SecretB, simtest.AccountB, simtest.MACB

	type target struct {
		c    *simtest.Client
		sn   string
		typ  *device.Type
		mu   sync.Mutex
		last any
	}
	var targets []*target
	for i, typ := range device.Types {
		targets = append(targets, &target{c: a, sn: simtest.SN('a', i), typ: typ}, &target{c: &b, sn: simtest.SN('b', i), typ: typ})
	}
	const workersPerDevice, commandsPerWorker = 3, 8
	var wg sync.WaitGroup
	for ti, tg := range targets {
		f := &tg.typ.Fields[0]
		values := goodValues(f)
		for w := 0; w < workersPerDevice; w++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(seed, 7))
				for n := 0; n < commandsPerWorker; n++ {
					v := values[rnd.IntN(len(values))]
					format := formats[rnd.IntN(2)]
					if format == device.XML {
						v.num = false
					}
					tg.mu.Lock()
					r := tg.c.Send(device.SendCommand, format, tg.c.Command(tg.sn, tg.typ.Name, v.field(f.WireName(format))))
					if r.Status == http.StatusOK {
						tg.last = v.want
					} else {
						t.Errorf("%s %s: %s", tg.typ.Name, v, r)
					}
					tg.mu.Unlock()
				}
			}(uint64(ti*10 + w))
		}
	}
	// Renames, messages and readers run beside them, unserialized.
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; n < 10; n++ {
				c := a
				if w%2 == 1 {
					c = &b
				}
				sn := simtest.SN('a'+byte(w%2), n%len(device.Types))
				if r := c.Send(device.UpdateName, formats[n%2], append(c.Envelope(), S("sn", sn), S("name", fmt.Sprintf("w%d", w)))); r.Status != 200 {
					t.Errorf("rename: %s", r)
				}
				if r := c.Send(device.SendMessage, formats[n%2], message(c, fmt.Sprintf("w%d=%d", w, n))); r.Status != 200 {
					t.Errorf("message: %s", r)
				}
				a.State()
				a.Admin("GET", "/_sim/", "")
			}
		}(w)
	}
	wg.Wait()
	for _, tg := range targets {
		mac := simtest.MACA
		if tg.c == &b {
			mac = simtest.MACB
		}
		if got := a.Device(mac, tg.sn).State[tg.typ.Fields[0].Name]; got != tg.last {
			t.Errorf("%s %s: %s = %v, want the last acknowledged %v", mac, tg.typ.Name, tg.typ.Fields[0].Name, got, tg.last)
		}
	}
	for _, mac := range []string{simtest.MACA, simtest.MACB} {
		msgs := a.Messages(mac)
		if len(msgs) != 20 {
			t.Errorf("%s has %d messages, want 20", mac, len(msgs))
		}
		seen := map[string]int{}
		for _, m := range msgs {
			var w, n int
			fmt.Sscanf(m.Value, "w%d=%d", &w, &n)
			if n < seen[fmt.Sprint(w)] {
				t.Errorf("messages of worker %d out of order: %s", w, dump(msgs))
			}
			seen[fmt.Sprint(w)] = n
		}
	}
}
