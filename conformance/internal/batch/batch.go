package batch

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/conformance/internal/control"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// A batch is the planned checks of one device (or of the tested gateway's
// messages) that have not run yet, sent together (sender.go says when):
// the valid requests and the refusals' controls first, then, the device
// quiet, the refusals whose control was accepted, then the valid state
// checks in lanes. What each check's requests got is handed to it
// (Sender.fetched), to be judged in its place in the run.
type batch struct {
	s   *Sender
	ctx context.Context
	sn  string
	// valid, refusals and states are the batch's plans by what they send.
	valid, refusals, states []Plan
	// ctls are the controls the refusals need that were not sent yet.
	ctls map[control.Key]*batchControl
	mu   sync.Mutex
	// answers: a case's request in one format is sent once, and its
	// answer given to each of the case's checks that judges it (its MUST
	// and SHOULD checks, the parity check): they judge the same request.
	answers map[caseKey]Step
	results map[string]*fetched
	// trips are the round trips one after another the batch took.
	trips int
}

// caseKey is a case's request in one format.
type caseKey struct {
	id string
	f  device.Format
}

// batchControl is a refusal's control sent in a batch.
type batchControl struct {
	key      control.Key
	typ      string
	what     string
	res      control.Result
	ex       client.Exchange
	answered bool
}

// send sends the planned checks of a device that have not run yet,
// asking's among them, as a batch.
func (s *Sender) send(ctx context.Context, sn, asking string) {
	b := s.newBatch(ctx, sn, asking)
	began := time.Now()
	defer func() { s.cfg.Trips.Add(sn, b.trips, time.Since(began)) }()
	b.saveDevice()
	b.findControls()
	b.sendValidAndControls()
	// The device quiet (the changes above applied), the refusals whose
	// controls were accepted.
	s.link().QuietAfterBatch(ctx, sn)
	b.sendRefusals()
	// The state checks of valid values, in lanes, when no stand-in takes
	// them (standin.go).
	if len(b.states) > 0 && !s.hasStandIn(sn) {
		for id, f := range s.runLanes(ctx, sn, s.laneable(b.states)) {
			b.results[id] = f
		}
	}
	b.hand()
}

// newBatch gathers a device's plans that have not run (asking's too).
func (s *Sender) newBatch(ctx context.Context, sn, asking string) *batch {
	b := &batch{s: s, ctx: ctx, sn: sn, answers: map[caseKey]Step{}, results: map[string]*fetched{}}
	s.mu.Lock()
	var valid, refusals, states []Plan
	for id, p := range s.plans {
		if s.ran[id] && id != asking {
			continue // it has run, one at a time
		}
		switch {
		case p.Kind == ValidState:
			states = append(states, p)
		case p.Refusal:
			refusals = append(refusals, p)
		default:
			valid = append(valid, p)
		}
	}
	s.mu.Unlock()
	b.valid, b.refusals, b.states = b.mine(valid), b.mine(refusals), b.mine(states)
	return b
}

// mine are the plans about the batch's device, in ID order.
func (b *batch) mine(ps []Plan) []Plan {
	var out []Plan
	for _, p := range ps {
		if DeviceOf(b.s.bench, p.Case, p.Formats[0]) == b.sn {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// saveDevice saves the device to be put back before anything is sent.
func (b *batch) saveDevice() {
	for _, p := range append(append(append([]Plan(nil), b.valid...), b.refusals...), b.states...) {
		if c, skip := p.Case.Build(b.s.bench, p.Formats[0], p.Case.ID); skip == "" {
			b.s.cfg.PutBack(b.ctx, c)
		}
	}
}

// findControls finds the controls the refusals need, not sent yet.
func (b *batch) findControls() {
	s := b.s
	b.ctls = map[control.Key]*batchControl{}
	for _, p := range b.refusals {
		for _, f := range p.Formats {
			c, skip := p.Case.Build(s.bench, f, p.Case.ID)
			if skip != "" {
				continue
			}
			k, typ, what, ok := control.Of(s.bench, c, f)
			if !ok {
				continue
			}
			_, done := s.cfg.Controls.Known(k)
			if !done && b.ctls[k] == nil {
				b.ctls[k] = &batchControl{key: k, typ: typ, what: what}
			}
		}
	}
}

// answerJobs send each case's request once per format.
func (b *batch) answerJobs(ps []Plan) []func() {
	seen := map[caseKey]bool{}
	var js []func()
	for _, p := range ps {
		for _, f := range p.Formats {
			k := caseKey{p.Case.ID, f}
			if seen[k] {
				continue
			}
			seen[k] = true
			js = append(js, func() {
				c, skip := p.Case.Build(b.s.bench, f, p.Case.ID)
				if skip != "" {
					return
				}
				r, ex, err := b.s.link().RoundTrip(b.ctx, c.Request(f))
				if err != nil {
					return // no answer: the check sends again itself
				}
				b.mu.Lock()
				b.answers[k] = Step{Resp: r, Ex: ex}
				b.mu.Unlock()
			})
		}
	}
	return js
}

// answered gives each plan the answers of its formats, once all came.
func (b *batch) answered(ps []Plan) {
	for _, p := range ps {
		var steps []Step
		for _, f := range p.Formats {
			st, ok := b.answers[caseKey{p.Case.ID, f}]
			if !ok {
				steps = nil
				break
			}
			steps = append(steps, st)
		}
		if steps != nil {
			b.results[p.ID] = &fetched{steps: steps, shared: true}
		}
	}
}

// sendValidAndControls sends the valid requests and the controls (they
// change the device, but none of these checks reads it), and keeps what
// they got: the valid cases' answers for the stand-ins (standin.go), the
// controls' for the refusals of the rest of the run.
func (b *batch) sendValidAndControls() {
	s := b.s
	jobs := b.answerJobs(b.valid)
	for _, c := range b.ctls {
		jobs = append(jobs, func() {
			valid := s.bench.Base(c.key.Op, c.key.SN, c.typ)
			r, ex, err := s.link().RoundTrip(b.ctx, valid.Request(c.key.F))
			switch {
			case err != nil:
				c.res = control.Result{What: fmt.Sprintf("the valid %s got no answer (%v)", c.what, err)}
			case !link.Accepted(r):
				c.res = control.Result{What: fmt.Sprintf("the valid %s was refused (%s)", c.what, link.Describe(r))}
			default:
				c.res = control.Result{OK: true}
			}
			c.ex, c.answered = ex, true
		})
	}
	s.runAll(jobs)
	b.trips += s.waves(len(jobs))
	b.answered(b.valid)
	// What the device answered to each valid case: a value it refused
	// keeps its state check on it (standin.go).
	s.mu.Lock()
	for k, st := range b.answers {
		s.stand.answered(k.id, k.f, link.Accepted(st.Resp))
	}
	s.mu.Unlock()
	for k, c := range b.ctls {
		if c.answered {
			s.cfg.Controls.PutAhead(k, c.res, c.ex)
		}
	}
}

// controlled says whether every format of a refusal has its control
// accepted: else the check says so alone.
func (b *batch) controlled(p Plan) bool {
	s := b.s
	for _, f := range p.Formats {
		c, skip := p.Case.Build(s.bench, f, p.Case.ID)
		if skip != "" {
			return false
		}
		k, _, _, ok := control.Of(s.bench, c, f)
		res, done := s.cfg.Controls.Known(k)
		if !ok || !done || !res.OK {
			return false
		}
	}
	return true
}

// sendRefusals sends the refusals whose control was accepted: those that
// judge only an answer, and the state checks, which read the device (or
// the gateway's messages) before and after, as they must change nothing.
func (b *batch) sendRefusals() {
	var jobs []func()
	var answerOnly []Plan
	for _, p := range b.refusals {
		if !b.controlled(p) {
			continue
		}
		if p.Kind == Answer {
			answerOnly = append(answerOnly, p)
			continue
		}
		jobs = append(jobs, func() { b.refusalState(p) })
	}
	// A refusal's state job is three round trips (read, send, read).
	b.trips += 3*b.s.waves(len(jobs)) + b.s.waves(len(answerOnly)*2)
	jobs = append(jobs, b.answerJobs(answerOnly)...)
	b.s.runAll(jobs)
	b.answered(answerOnly)
}

// refusalState reads, sends a refusal and reads again.
func (b *batch) refusalState(p Plan) {
	s, ctx := b.s, b.ctx
	f := p.Formats[0]
	c, skip := p.Case.Build(s.bench, f, p.Case.ID)
	if skip != "" {
		return
	}
	snap := func() (*observer.State, bool) {
		if c.Op == device.SendMessage {
			l, err := s.link().ReadLogNow(ctx, s.bench.Target.MAC)
			if err != nil {
				return nil, false
			}
			return &observer.State{Log: l}, true
		}
		dv, err := s.link().ReadDeviceNow(ctx, s.bench.Target.MAC, c.SN)
		if err != nil {
			return nil, false
		}
		return &observer.State{Device: &dv}, true
	}
	before, ok := snap()
	if !ok {
		return
	}
	r, ex, err := s.link().RoundTrip(ctx, c.Request(f))
	if err != nil {
		return
	}
	after, ok := snap()
	if !ok {
		return
	}
	b.mu.Lock()
	b.results[p.ID] = &fetched{steps: []Step{{State: before}, {Resp: r, Ex: ex}, {State: after}}}
	b.mu.Unlock()
}

// hand gives each check what its requests got.
func (b *batch) hand() {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fetched == nil {
		s.fetched = map[string]*fetched{}
	}
	for id, f := range b.results {
		s.fetched[id] = f
	}
}
