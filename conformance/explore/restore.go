package explore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Saved is a device as it was before a run: its name and its whole state
// when known (from the observer, else from the fleet file).
type Saved struct {
	MAC, SN, Type string
	Name          string
	State         map[string]string
}

// Snapshot reads every device of the world through the observer before a
// run; a device the observer does not show (or every device, without an
// observer) is taken as the fleet file gives it.
func (t *Target) Snapshot(ctx context.Context, w *World) []Saved {
	fromFleet := map[devKey]Saved{}
	for _, a := range t.fleet.Accounts {
		for _, g := range a.Gateways {
			for _, d := range g.Devices {
				s := Saved{MAC: strings.ToLower(g.MAC), SN: strings.ToLower(d.SN), Type: d.Type, Name: d.Name, State: map[string]string{}}
				for k, v := range d.State {
					s.State[k] = valueText(v)
				}
				fromFleet[devKey{s.MAC, s.SN}] = s
			}
		}
	}
	var reads []Op
	for _, k := range w.Devices() {
		reads = append(reads, Op{Kind: ReadDevice, MAC: k.MAC, SN: k.SN})
	}
	var res []Result
	if t.Observer != "" {
		res = t.readAll(ctx, reads)
	}
	out := make([]Saved, 0, len(reads))
	for i, op := range reads {
		s := fromFleet[op.device()]
		s.MAC, s.SN, s.Type = op.MAC, op.SN, w.devs[op.device()]
		if res != nil && res[i].Err == "" && res[i].Device != nil {
			s.Name, s.State = res[i].Device.Name, res[i].Device.State
		}
		out = append(out, s)
	}
	return out
}

// Restore puts every saved device that touched names ("mac", "sn") back:
// its name, then its whole state in one command, when both are known. It
// sends several devices at once and returns how many were put back.
func (t *Target) Restore(ctx context.Context, saved []Saved, touched [][2]string) (int, error) {
	want := map[devKey]bool{}
	for _, k := range touched {
		want[devKey{k[0], k[1]}] = true
	}
	acct := map[string]WAccount{}
	for _, a := range accountsOf(t) {
		for _, g := range a.Gateways {
			acct[g.MAC] = a
		}
	}
	var (
		mu   sync.Mutex
		errs []error
		done int
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, 8)
	for _, s := range saved {
		if !want[devKey{s.MAC, s.SN}] {
			continue
		}
		a, ok := acct[s.MAC]
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			base := Op{Format: "json", Account: a.ID, Key: a.Key, MAC: s.MAC, SN: s.SN, Note: "valid"}
			var ops []Op
			if s.Name != "" {
				op := base
				op.Kind, op.Fields = Rename, []KV{{Key: "name", Value: s.Name}}
				ops = append(ops, op)
			}
			fields := t.rules.Fields(s.Type)
			if len(fields) > 0 && len(s.State) >= len(fields) {
				op := base
				op.Kind, op.Type = Command, s.Type
				for _, f := range fields {
					v, ok := s.State[f]
					if !ok {
						op.Fields = nil
						break
					}
					op.Fields = append(op.Fields, KV{Key: f, Value: v})
				}
				if op.Fields != nil {
					ops = append(ops, op)
				}
			}
			ok := len(ops) > 0
			for _, op := range ops {
				r := t.Do(ctx, op)
				if r.Err != "" || !r.Answer.Success {
					ok = false
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s %s/%s: %s", op.Kind, s.MAC, s.SN, describe(r)))
					mu.Unlock()
				}
			}
			if ok {
				mu.Lock()
				done++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return done, errors.Join(errs...)
}

// accountsOf is the target's fleet's accounts with a key.
func accountsOf(t *Target) []WAccount {
	w, err := NewWorld(t.fleet)
	if err != nil {
		return nil
	}
	return w.Accounts
}
