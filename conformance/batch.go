package conformance

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// A batch is the planned checks of one device (or of the tested gateway's
// messages) that have not run yet, sent together (concurrent.go says
// when): the valid requests and the refusals' controls first, then, the
// device quiet, the refusals whose control was accepted, then the valid
// state checks in lanes. What each check's requests got is handed to it
// (slowState.fetched), to be judged in its place in the run.
type batch struct {
	env *Env
	ctx context.Context
	sn  string
	// valid, refusals and states are the batch's plans by what they send.
	valid, refusals, states []plan
	// ctls are the controls the refusals need that were not sent yet.
	ctls map[controlKey]*batchControl
	mu   sync.Mutex
	// answers: a case's request in one format is sent once, and its
	// answer given to each of the case's checks that judges it (its MUST
	// and SHOULD checks, the parity check): they judge the same request.
	answers map[caseKey]step
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
	key      controlKey
	op       device.Operation
	f        device.Format
	sn, typ  string
	what     string
	res      controlResult
	ex       client.Exchange
	answered bool
}

// sendConcurrently sends the planned checks of a device that have not run
// yet, asking's among them, as a batch.
func (env *Env) sendConcurrently(ctx context.Context, sn, asking string) {
	b := env.newBatch(ctx, sn, asking)
	began := time.Now()
	defer func() { env.chain.Add(sn, b.trips, time.Since(began)) }()
	b.saveDevice()
	b.findControls()
	b.sendValidAndControls()
	// The device quiet (the changes above applied), the refusals whose
	// controls were accepted.
	env.link().QuietAfterBatch(ctx, sn)
	b.sendRefusals()
	// The state checks of valid values, in lanes, when no stand-in takes
	// them (spread.go).
	if len(b.states) > 0 && !env.hasStandIn(sn) {
		for id, f := range env.runLanes(ctx, sn, env.laneable(b.states)) {
			b.results[id] = f
		}
	}
	b.hand()
}

// newBatch gathers a device's plans that have not run (asking's too).
func (env *Env) newBatch(ctx context.Context, sn, asking string) *batch {
	b := &batch{env: env, ctx: ctx, sn: sn, answers: map[caseKey]step{}, results: map[string]*fetched{}}
	s := &env.slow
	s.mu.Lock()
	var valid, refusals, states []plan
	for id, p := range s.plans {
		if s.ran[id] && id != asking {
			continue // it has run, one at a time
		}
		switch {
		case p.kind == planValidState:
			states = append(states, p)
		case p.refusal:
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
func (b *batch) mine(ps []plan) []plan {
	var out []plan
	for _, p := range ps {
		if b.env.planDevice(p) == b.sn {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// saveDevice saves the device to be put back before anything is sent.
func (b *batch) saveDevice() {
	for _, p := range append(append(append([]plan(nil), b.valid...), b.refusals...), b.states...) {
		if c, skip := p.c.Build(&b.env.Bench, p.formats[0], p.c.ID); skip == "" {
			b.env.putBack(b.ctx, c)
		}
	}
}

// findControls finds the controls the refusals need, not sent yet.
func (b *batch) findControls() {
	env := b.env
	b.ctls = map[controlKey]*batchControl{}
	for _, p := range b.refusals {
		for _, f := range p.formats {
			c, skip := p.c.Build(&env.Bench, f, p.c.ID)
			if skip != "" {
				continue
			}
			k, typ, what, ok := env.controlOf(c, f)
			if !ok {
				continue
			}
			env.ctlMu.Lock()
			_, done := env.controls[k]
			env.ctlMu.Unlock()
			if !done && b.ctls[k] == nil {
				b.ctls[k] = &batchControl{key: k, op: k.op, f: f, sn: k.sn, typ: typ, what: what}
			}
		}
	}
}

// answerJobs send each case's request once per format.
func (b *batch) answerJobs(ps []plan) []func() {
	seen := map[caseKey]bool{}
	var js []func()
	for _, p := range ps {
		for _, f := range p.formats {
			k := caseKey{p.c.ID, f}
			if seen[k] {
				continue
			}
			seen[k] = true
			js = append(js, func() {
				c, skip := p.c.Build(&b.env.Bench, f, p.c.ID)
				if skip != "" {
					return
				}
				r, ex, err := b.env.link().RoundTrip(b.ctx, c.Request(f))
				if err != nil {
					return // no answer: the check sends again itself
				}
				b.mu.Lock()
				b.answers[k] = step{resp: r, ex: ex}
				b.mu.Unlock()
			})
		}
	}
	return js
}

// answered gives each plan the answers of its formats, once all came.
func (b *batch) answered(ps []plan) {
	for _, p := range ps {
		var steps []step
		for _, f := range p.formats {
			st, ok := b.answers[caseKey{p.c.ID, f}]
			if !ok {
				steps = nil
				break
			}
			steps = append(steps, st)
		}
		if steps != nil {
			b.results[p.id] = &fetched{steps: steps, shared: true}
		}
	}
}

// sendValidAndControls sends the valid requests and the controls (they
// change the device, but none of these checks reads it), and keeps what
// they got: the valid cases' answers for the stand-ins (spread.go), the
// controls' for the refusals of the rest of the run.
func (b *batch) sendValidAndControls() {
	env, s := b.env, &b.env.slow
	jobs := b.answerJobs(b.valid)
	for _, c := range b.ctls {
		jobs = append(jobs, func() {
			valid := env.Base(c.op, c.sn, c.typ)
			r, ex, err := env.link().RoundTrip(b.ctx, valid.Request(c.f))
			switch {
			case err != nil:
				c.res = controlResult{what: fmt.Sprintf("the valid %s got no answer (%v)", c.what, err)}
			case !link.Accepted(r):
				c.res = controlResult{what: fmt.Sprintf("the valid %s was refused (%s)", c.what, describe(r))}
			default:
				c.res = controlResult{ok: true}
			}
			c.ex, c.answered = ex, true
		})
	}
	env.runAll(jobs)
	b.trips += env.waves(len(jobs))
	b.answered(b.valid)
	// What the device answered to each valid case: a value it refused
	// keeps its state check on it (spread.go).
	s.mu.Lock()
	for k, st := range b.answers {
		s.stand.answered(k.id, k.f, link.Accepted(st.resp))
	}
	s.mu.Unlock()
	env.ctlMu.Lock()
	defer env.ctlMu.Unlock()
	for k, c := range b.ctls {
		if !c.answered {
			continue
		}
		if env.controls == nil {
			env.controls = map[controlKey]controlResult{}
		}
		env.controls[k] = c.res
		if s.ctlEx == nil {
			s.ctlEx = map[controlKey]client.Exchange{}
		}
		s.ctlEx[k] = c.ex
	}
}

// controlled says whether every format of a refusal has its control
// accepted: else the check says so alone.
func (b *batch) controlled(p plan) bool {
	env := b.env
	for _, f := range p.formats {
		c, skip := p.c.Build(&env.Bench, f, p.c.ID)
		if skip != "" {
			return false
		}
		k, _, _, ok := env.controlOf(c, f)
		env.ctlMu.Lock()
		res, done := env.controls[k]
		env.ctlMu.Unlock()
		if !ok || !done || !res.ok {
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
	var answerOnly []plan
	for _, p := range b.refusals {
		if !b.controlled(p) {
			continue
		}
		if p.kind == planAnswer {
			answerOnly = append(answerOnly, p)
			continue
		}
		jobs = append(jobs, func() { b.refusalState(p) })
	}
	// A refusal's state job is three round trips (read, send, read).
	b.trips += 3*b.env.waves(len(jobs)) + b.env.waves(len(answerOnly)*2)
	jobs = append(jobs, b.answerJobs(answerOnly)...)
	b.env.runAll(jobs)
	b.answered(answerOnly)
}

// refusalState reads, sends a refusal and reads again.
func (b *batch) refusalState(p plan) {
	env, ctx := b.env, b.ctx
	f := p.formats[0]
	c, skip := p.c.Build(&env.Bench, f, p.c.ID)
	if skip != "" {
		return
	}
	snap := func() (*state, bool) {
		if c.Op == device.SendMessage {
			l, err := env.link().ReadLogNow(ctx, env.Target.MAC)
			if err != nil {
				return nil, false
			}
			return &state{Log: l}, true
		}
		dv, err := env.link().ReadDeviceNow(ctx, env.Target.MAC, c.SN)
		if err != nil {
			return nil, false
		}
		return &state{Device: &dv}, true
	}
	before, ok := snap()
	if !ok {
		return
	}
	r, ex, err := env.link().RoundTrip(ctx, c.Request(f))
	if err != nil {
		return
	}
	after, ok := snap()
	if !ok {
		return
	}
	b.mu.Lock()
	b.results[p.id] = &fetched{steps: []step{{st: before}, {resp: r, ex: ex}, {st: after}}}
	b.mu.Unlock()
}

// hand gives each check what its requests got.
func (b *batch) hand() {
	s := &b.env.slow
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fetched == nil {
		s.fetched = map[string]*fetched{}
	}
	for id, f := range b.results {
		s.fetched[id] = f
	}
}
