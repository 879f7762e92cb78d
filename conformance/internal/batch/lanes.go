package batch

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// The lane: the state checks of valid values of a slow device that has
// no stand-in (standin.go). Such a check reads the device, sends one valid
// command and reads it again, wanting exactly the value sent and every
// other field as the command said. Against a device that answers after
// 1.5 s the Thermostat's hundred-odd of them cost three minutes one after
// another, and the demo fleet has no other Thermostat to move them to.
//
// Each check keeps its whole published request. Every valid command of a
// case carries all of its type's fields, as the published body does
// ("`control` with the envelope fields (2.1), `sn`, `type`, and the fields
// of that device type (2.3)", gateway-api.md 4.1): the field under test
// with the case's value and every other field with its example value.
// Sending only the field under test, so that checks of different fields
// could share the device, would put a form only the CONTRACT allows
// (CONTRACT 3: "A command must carry at least one field of its type; each
// field present is validated and applied, fields absent keep their
// value") under a MUST check, and would leave the other fields to be
// judged against whatever the other checks sent: not done. Because every
// command writes every field, the device's state after a command is the
// whole state that command says, whatever came before it: a read shows
// the state of the command that landed last. A check can then tell its
// own command's state from every other's, as long as no other command
// that may land while it is in flight leaves the same state.
//
// So once the device is known slow, its state checks of valid values are
// sent together, laneGap apart, never two in flight that leave the same
// state (as the checks judge it: enumerated values in any letter case are
// one for a MUST check), and the device is read right after each answer.
// A command is in flight from its sending until its read came back; a
// check's rivals are the commands in flight at some moment between its
// sending and its read. Then each check judges, in its place in the run:
//   - its answer: success;
//   - the device right after it: every field exactly as its command sent
//     it, as the check alone wants it, and the name unchanged;
//   - a read showing exactly the whole state one of its rivals leaves
//     means that rival landed after it: the read tells nothing about its
//     own command, and the check is not judged here but runs alone
//     afterwards, as before; anything else fails it here.
//
// A check that fails here is run again alone, with the same request, and
// only that result counts: a failure found while sent concurrently is
// confirmed alone before it is reported. A target that applies changes
// after it answers shows older states: those checks run alone, and the
// device is left quiet (quietAfterBatch) before the run reads on. What
// this cannot see that the check alone would: a wrong state left by this
// check's command, overwritten before the read by a rival's command that
// left exactly this check's state; rivals never leave it when right, so
// that takes a second wrong command landing in that moment. A vendor's QA
// engineer sees each such check say in its report how it was sent and what
// was judged, and the progress line count them.
//
// The lane lasts about as long as the most common state's commands one
// after another: in the demo fleet the Thermostat's example state (mode
// and fan at their example value Auto, in any letter case: 16 checks),
// some 25 s instead of some 170 s.

// laneGap is the time between two commands of the lane: a device that
// applies a command when it answers then applies them that far apart, and
// the read after an answer (a loopback or LAN round trip) comes before
// the next command lands.
const laneGap = 150 * time.Millisecond

// laneResult is what a lane check's requests got, fetched ahead.
type laneResult struct {
	// typ is the device's type, field the one its case is about.
	typ, field string
	// want is each field's value as the check alone wants it (canonical);
	// rivals the lane field's values of the check's rivals.
	want   map[string]string
	rivals []map[string]string
	name   string
	resp   *client.Response
	ex     client.Exchange
	err    error
	// own is the device read right after the answer.
	own    observer.Device
	ownErr error
	// sent, read: when the command was sent and the read came back.
	sent, read time.Time
	inLane     int
}

// laneMember is a check of a lane, ready to send.
type laneMember struct {
	p    Plan
	f    device.Format
	call catalog.Call
	want map[string]string
	// key is the lane field's value as its check judges it.
	key string
}

// lanesNote is what a slow device's lane did, for progress.
type lanesNote struct {
	checks, alone int
	took          time.Duration
}

// laneable are the state checks of valid values of a slow device that go
// in its lane (the others run alone, as before), with their commands.
func (s *Sender) laneable(states []Plan) []laneMember {
	s.mu.Lock()
	refused := map[string]bool{}
	for k := range s.stand.refused {
		refused[k] = true
	}
	s.mu.Unlock()
	sort.Slice(states, func(i, j int) bool { return states[i].ID < states[j].ID })
	var out []laneMember
	for _, p := range states {
		f := p.Formats[0]
		if refused[p.Case.ID+"/"+f.String()] {
			continue // it fails alone, as in any run
		}
		if m, ok := s.laneCommand(p, f); ok {
			out = append(out, m)
		}
	}
	return out
}

// laneCommand is a valid case's command with the values it must leave;
// false when the command is not one value per field of its type (a raw
// body, a field under another name or missing).
func (s *Sender) laneCommand(p Plan, f device.Format) (laneMember, bool) {
	c, skip := p.Case.Build(s.bench, f, p.Case.ID)
	if skip != "" || c.Raw != nil || c.Op != device.SendCommand || p.Case.Field == "" {
		return laneMember{}, false
	}
	t, ok := oracle.LookupType(c.Type)
	if !ok {
		return laneMember{}, false
	}
	want := map[string]string{}
	for _, x := range c.Fields {
		if x.Wire != "" || x.Lit {
			return laneMember{}, false
		}
		for i := range t.Fields {
			fd := &t.Fields[i]
			if fd.Name != x.Name {
				continue
			}
			if _, twice := want[fd.Name]; twice {
				return laneMember{}, false
			}
			v, ok := catalog.Canonical(fd, x.Value, x.Num)
			if !ok {
				return laneMember{}, false
			}
			want[fd.Name] = v
		}
	}
	if len(want) != len(t.Fields) || want[p.Case.Field] == "" {
		return laneMember{}, false
	}
	return laneMember{p: p, f: f, call: c, want: want, key: stateKey(t, want)}, true
}

// stateKey is a state as the checks judge it: every field, enumerated
// values in any letter case alike (a MUST check does not judge it, so no
// two commands that would leave states differing only so are in flight
// together).
func stateKey(t *oracle.Type, state map[string]string) string {
	m := map[string]string{}
	for k, v := range state {
		m[k] = v
	}
	catalog.FoldEnums(t, m)
	var b strings.Builder
	for _, fd := range t.Fields {
		b.WriteString(fd.Name + "=" + m[fd.Name] + ";")
	}
	return b.String()
}

// runLanes sends the lane checks of a slow device (sn) and gives each
// check judged there what it got; the others run alone.
func (s *Sender) runLanes(ctx context.Context, sn string, members []laneMember) map[string]*fetched {
	out := map[string]*fetched{}
	if len(members) == 0 || ctx.Err() != nil || s.link().Stopped() {
		return out
	}
	mac, dev := s.bench.Target.MAC, members[0].call.SN
	before, err := s.link().ReadDeviceNow(ctx, mac, dev)
	if err != nil {
		return out
	}
	t0 := time.Now()
	res := s.runLane(ctx, mac, dev, before.Name, members)
	note := lanesNote{took: time.Since(t0)}
	late := false
	for i, m := range members {
		r := res[i]
		if r == nil {
			continue
		}
		note.checks++
		if judgeLane(m.p.Case.Type, r, true) != "" {
			late = true // or wrong: either way, wait before reading on
		}
		if laneUnjudged(r) {
			note.alone++
			continue // runs alone
		}
		out[m.p.ID] = &fetched{lane: r}
	}
	// The device quiet before the checks that follow read it: a target
	// that applies changes late may still apply the last ones. One that
	// showed every state right after its answer has nothing left to apply.
	if late {
		s.link().QuietAfterBatch(ctx, sn)
	} else {
		s.link().Forget(sn)
	}
	s.mu.Lock()
	if s.lanes == nil {
		s.lanes = map[string]lanesNote{}
	}
	n := s.lanes[sn]
	n.checks += note.checks
	n.alone += note.alone
	n.took += note.took
	s.lanes[sn] = n
	s.mu.Unlock()
	return out
}

// runLane sends the lane's commands, laneGap apart, never two in flight
// that would leave the same state, each read back right after its answer.
func (s *Sender) runLane(ctx context.Context, mac, dev, name string, lane []laneMember) []*laneResult {
	res := make([]*laneResult, len(lane))
	var mu sync.Mutex
	inFlight := map[string]bool{}
	done := make(chan struct{}, len(lane))
	var wg sync.WaitGroup
	queue := make([]int, len(lane))
	for i := range queue {
		queue[i] = i
	}
	var last time.Time
	for len(queue) > 0 && ctx.Err() == nil {
		mu.Lock()
		// The free value with the most commands left first: a lane lasts
		// at least as long as its most frequent value's commands one
		// after another.
		pick, most := -1, 0
		left := map[string]int{}
		for _, i := range queue {
			left[lane[i].key]++
		}
		for qi, i := range queue {
			if k := lane[i].key; !inFlight[k] && len(inFlight) < s.cfg.Concurrency && left[k] > most {
				pick, most = qi, left[k]
			}
		}
		if pick < 0 {
			mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
			}
			continue
		}
		i := queue[pick]
		queue = append(queue[:pick], queue[pick+1:]...)
		inFlight[lane[i].key] = true
		mu.Unlock()
		if wait := laneGap - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		last = time.Now()
		m := lane[i]
		r := &laneResult{typ: m.call.Type, field: m.p.Case.Field, want: m.want, name: name, sent: last, inLane: len(lane)}
		res[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.resp, r.ex, r.err = s.link().RoundTrip(ctx, m.call.Request(m.f))
			r.own, r.ownErr = s.link().ReadDeviceNow(ctx, mac, dev)
			mu.Lock()
			r.read = time.Now()
			delete(inFlight, m.key)
			mu.Unlock()
			done <- struct{}{}
		}()
	}
	wg.Wait()
	// A check's rivals: the commands in flight at some moment between its
	// sending and its read.
	for i, r := range res {
		if r == nil {
			continue
		}
		for j, o := range res {
			if j != i && o != nil && o.sent.Before(r.read) && o.read.After(r.sent) {
				r.rivals = append(r.rivals, o.want)
			}
		}
	}
	return res
}

// laneUnjudged says whether a lane check's read showed exactly the state
// a rival's command leaves (it landed after this one): the read tells
// nothing about what this check's command left.
func laneUnjudged(r *laneResult) bool {
	if r.err != nil || !link.Accepted(r.resp) || r.ownErr != nil {
		return false
	}
	t, ok := oracle.LookupType(r.typ)
	if !ok {
		return false
	}
	got := observer.Values(r.own.State)
	if len(got) != len(t.Fields) {
		return false
	}
	key := stateKey(t, got)
	if key == stateKey(t, r.want) {
		return false
	}
	for _, v := range r.rivals {
		if key == stateKey(t, v) {
			return true
		}
	}
	return false
}

// judgeLane says what a lane check's requests showed that the check alone
// would not accept ("" when nothing); strict judges the letter case of
// enumerated values (the CONTRACT's form), as expectApplied does.
func judgeLane(typ string, r *laneResult, strict bool) string {
	if r.err != nil {
		return fmt.Sprintf("no answer (%v)", r.err)
	}
	if !link.Accepted(r.resp) {
		return "the command was not accepted: " + link.Describe(r.resp)
	}
	if r.ownErr != nil {
		return "reading the device after the answer: " + r.ownErr.Error()
	}
	t, ok := oracle.LookupType(typ)
	if !ok {
		return "type " + typ + " is not in the published table"
	}
	got, want := observer.Values(r.own.State), map[string]string{}
	for k, v := range r.want {
		want[k] = v
	}
	if !strict {
		catalog.FoldEnums(t, got)
		catalog.FoldEnums(t, want)
	}
	var names []string
	for k := range got {
		names = append(names, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if got[k] != want[k] {
			return fmt.Sprintf("right after the answer %s is %q, not %q as sent", k, got[k], want[k])
		}
	}
	if r.own.Name != r.name {
		return fmt.Sprintf("the command changed the name to %q", r.own.Name)
	}
	return ""
}

// InLane judges a valid value's state check from its lane, when it was
// judged there: true when it passed; false to run it alone (not sent in a
// lane, or it failed there: then it is confirmed alone).
func (s *Sender) InLane(ctx context.Context, id string, c catalog.Case, f device.Format) bool {
	trial.Helper()
	fe := s.take(ctx, id)
	if fe == nil || fe.lane == nil {
		return false
	}
	r := fe.lane
	trial.From(ctx).By(fmt.Sprintf("the device is slow: this check's request was sent with the other state checks of valid values of this device, %s apart, never two in flight that leave the same state, "+
		"and the device read right after its answer; judged: its answer, every field exactly as sent (%d other commands were in flight meanwhile, none leaving this state), the name unchanged",
		laneGap, len(r.rivals)))
	if r.err == nil {
		s.link().Record(ctx, r.ex)
	}
	why := judgeLane(c.Type, r, !c.Want.OK)
	if why == "" {
		return true
	}
	trial.From(ctx).By("failed while sent with the other state checks of valid values of its device (" + why + "): confirmed alone")
	return false
}

// lanesNoteFor says how a slow device's state checks ran in its lane,
// for the progress line ("" when none did); s.mu is held.
func (s *Sender) lanesNoteFor(sn string) string {
	n := s.lanes[sn]
	if n.checks == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d state checks of valid values sent on it together in %s, %s apart, never two in flight that leave the same state, each read back right after its answer; %d ran alone again, overtaken)",
		n.checks, n.took.Round(time.Second), laneGap, n.alone)
}
