package diff

import (
	"context"
	"sync"

	"github.com/gwdmi/gwtools/conformance/explore"
)

// A sequential run of one sequence on both sides. Each step sends the
// operation to both sides at once, compares the answers, and, when either
// side accepted it (or it is the last), reads what it concerns on both
// sides and compares the change each made. The reads of step i go out
// together with step i+1's requests when step i+1 concerns another device
// or log: two independent requests on each side, one round trip instead
// of two, and the same observation, since a request about one device or
// log does not change another's. Before step i+1's answers are judged,
// step i's observation is compared, so the model and every verdict are as
// if each read had followed its step alone. A gateway's log only grows, so
// it is read once after the messages of a sequence rather than after each
// (and at once if what the model knows of it is about to change another
// way). Shrinking (a wanted key) reads after each step before the next,
// as the report's steps show them.

// seqRun is the state of one sequential run.
type seqRun struct {
	d        *Differ
	ctx      context.Context
	ops      []explore.Op
	a, b     *sideRun
	m        *explore.Model
	want     *string
	record   bool
	diverged map[string]bool
	// opened are the partitions an Open form (both sides answering alike
	// or not) left unknown to the rule table, by that step's index: a
	// state difference there is each side's reading of the form.
	opened map[string]int
	tr     *trace
	// pend is the last step's observation when its reads wait for the next
	// step's requests.
	pend *obs
	// logPend are the gateways whose log a message changed since it was
	// last read, each with that message's step.
	logPend map[string]int
}

// obs is one step's answers, the differences they showed, and the reads
// of what it concerns.
type obs struct {
	i      int
	op     explore.Op
	ra, rb explore.Result
	found  []*Difference
	// read is the observer read of what the step concerns; Kind "": none.
	read   explore.Op
	va, vb stateView
}

// execute runs ops on both sides from a reset (unless read-only) and fresh
// reads, comparing each answer and, after each step either side accepted
// and at the end, the state of what the step concerns. With want it stops
// at the first difference of that key.
func (d *Differ) execute(ctx context.Context, ops []explore.Op, want *string) (*trace, error) {
	r := &seqRun{d: d, ctx: ctx, ops: ops, want: want, record: want != nil,
		a: &sideRun{side: d.cfg.A, ops: ops, idx: 0}, b: &sideRun{side: d.cfg.B, ops: d.mapB.ops(ops), idx: 1},
		diverged: map[string]bool{}, opened: map[string]int{}, logPend: map[string]int{}, tr: &trace{}}
	parts, reads := d.partitions(ops)
	if err := both(func() error { return d.begin(ctx, r.a, reads) }, func() error { return d.begin(ctx, r.b, d.mapB.ops(reads)) }); err != nil {
		return nil, err
	}
	r.m = explore.NewModel(d.cfg.A.World, d.cfg.Rules)
	for i, p := range parts {
		v := r.a.initial[p]
		if v.err != "" || !sameView(v, r.b.initial[p], nil) {
			continue // the model knows only what both showed alike
		}
		setModel(r.m, reads[i], v)
	}
	for i := range ops {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hit, err := r.step(i)
		if err != nil || hit {
			return r.tr, err
		}
	}
	// At the end, every other partition the sequence touched: a change a
	// refused request made shows here. The last step's own was just read.
	if !d.observed() || len(ops) == 0 {
		return r.tr, nil
	}
	lastRead := explore.Partition(readOf(ops[len(ops)-1]))
	var rest []explore.Op
	for i, p := range parts {
		if !r.diverged[p] && p != lastRead {
			rest = append(rest, reads[i])
		}
	}
	if len(rest) == 0 {
		return r.tr, nil
	}
	var la, lb []explore.Result
	both(func() error { la = r.a.side.Target.ReadAll(ctx, rest); return nil },
		func() error { lb = r.b.side.Target.ReadAll(ctx, d.mapB.ops(rest)); return nil })
	for i, rd := range rest {
		va, vb := view(la[i]), view(lb[i])
		last := rd // the last operation on it, whose kind the difference names
		for _, op := range ops {
			if explore.Partition(readOf(op)) == explore.Partition(rd) {
				last = op
			}
		}
		x := d.compareState(last, rd, r.m, r.a, r.b, va, vb)
		if x == nil || d.noise.ignores(x) {
			continue
		}
		openState(x, r.opened, explore.Partition(rd), ops)
		x.Index = len(ops) - 1
		r.tr.diffs = append(r.tr.diffs, x)
		if want != nil && x.Key == *want {
			r.tr.hit = x
			break
		}
	}
	return r.tr, nil
}

// step sends step i to both sides, with the last step's reads when they
// wait, and judges it; hit says the wanted difference was met.
func (r *seqRun) step(i int) (bool, error) {
	op := r.ops[i]
	if r.pend != nil && explore.Partition(readOf(op)) == explore.Partition(r.pend.read) {
		// The same device or log: its reads go before this request.
		if r.finish(true) {
			return true, nil
		}
	}
	var v explore.Verdict
	if !op.IsRead() {
		v = r.m.Judge(op)
	}
	if _, ok := r.logPend[op.MAC]; ok && (op.Kind == explore.ReadMessages || op.Kind == explore.Message && v.Open) {
		// The log as it was before this step: an Open form's message
		// makes it each side's reading.
		if r.resolveLog(op.MAC) {
			return true, nil
		}
	}
	o := &obs{i: i, op: op}
	if r.exchange(o) {
		return true, nil
	}
	if err := r.ctx.Err(); err != nil {
		return false, err
	}
	agreed := false // both sides did what the model expects
	if !op.IsRead() {
		var hit bool
		if agreed, hit = r.judge(o, v); hit {
			return true, nil
		}
	}
	return r.readAfter(o, agreed), nil
}

// exchange sends the step's request to both sides at once, together with
// the reads of the last step when they wait (one round trip instead of
// two), and then judges the last step's observation, before this step's
// answers, as if each read had followed its step alone; true when it
// showed the wanted difference.
func (r *seqRun) exchange(o *obs) bool {
	d, ctx := r.d, r.ctx
	p := r.pend
	var wg sync.WaitGroup
	send := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	send(func() { o.rb = r.b.side.Target.Do(ctx, r.b.ops[o.i]) })
	if p != nil {
		send(func() { p.va = r.a.read(ctx, p.read, r.record) })
		send(func() { p.vb = r.b.read(ctx, d.mapB.op(p.read), r.record) })
	}
	o.ra = r.a.side.Target.Do(ctx, o.op)
	wg.Wait()
	d.sent++
	return p != nil && r.finish(false)
}

// judge compares the answers of a request that is not a read against the
// model's verdict v, and has the model follow what both sides did alike
// (else forget it), first comparing the gateway's log where what the
// model knows of it is about to change otherwise than by an expected
// message. agreed says both sides did what the model expects; hit that
// the log's comparison showed the wanted difference.
func (r *seqRun) judge(o *obs, v explore.Verdict) (agreed, hit bool) {
	op, ra, rb := o.op, o.ra, o.rb
	if x := r.d.compareAnswers(op, v, ra, rb); x != nil {
		x.Index = o.i
		o.found = append(o.found, x)
	}
	// The model follows what both did alike; else it forgets.
	// An Open form both refused: a refused request changes nothing
	// (CONTRACT 3), so the model keeps what it knows.
	keep := v.Open && ra.Err == "" && rb.Err == "" && !ra.Answer.Success && !rb.Answer.Success
	agree := ra.Answer.Success == rb.Answer.Success && ra.Err == "" && rb.Err == "" && v.Expect.Matches(ra.Answer)
	opens := v.Open && (ra.Answer.Success || rb.Answer.Success)
	if _, ok := r.logPend[op.MAC]; ok && (opens || !keep && (!agree || v.Open)) {
		// What the model knows of the gateway's log is about to
		// change otherwise than by an expected message: compare it
		// first, unless this step's message is already in it (a side
		// accepted it), when the read after this step shows the
		// earlier messages with it.
		if op.Kind == explore.Message && (ra.Answer.Success || rb.Answer.Success) {
			delete(r.logPend, op.MAC)
		} else if r.resolveLog(op.MAC) {
			return false, true
		}
	}
	switch {
	case keep:
	case agree:
		r.m.Apply(op, v)
		agreed = !v.Open
	default:
		r.m.Forget(op)
	}
	if opens {
		// The model forgot the device and the gateway's log.
		r.opened[explore.Partition(explore.Op{Kind: explore.ReadMessages, MAC: op.MAC})] = o.i
		if op.SN != "" {
			r.opened[explore.Partition(explore.Op{Kind: explore.ReadDevice, MAC: op.MAC, SN: op.SN})] = o.i
		}
	}
	return agreed, false
}

// readAfter decides what of the step's concern is read after it, and
// when: a read is its own observation; the last step and a step a side
// accepted are read, a message both sides took as expected only with the
// log's next read (a log only grows); the read waits for the next step's
// requests unless the run records its steps. It makes the step the
// pending one, and finishes it at once when it does not wait; true when
// that showed the wanted difference.
func (r *seqRun) readAfter(o *obs, agreed bool) bool {
	op, i, ra, rb := o.op, o.i, o.ra, o.rb
	rd := readOf(op)
	switch {
	case !r.d.observed() || rd.Kind == "":
	case op.IsRead():
		// A read is its own observation.
		o.read, o.va, o.vb = rd, view(ra), view(rb)
		o.va.curl, o.vb.curl = explore.Curl(op, ra), explore.Curl(r.b.ops[i], rb)
		r.pend = o
		return r.finish(false)
	case i == len(r.ops)-1:
		o.read = rd
	case !ra.Answer.Success && !rb.Answer.Success:
	case op.Kind == explore.Message && !r.record && agreed:
		// A log only grows: a later read shows this message with the
		// ones after it, the final read at the latest.
		r.logPend[op.MAC] = i
	default:
		o.read = rd
	}
	r.pend = o
	if o.read.Kind == "" || r.record || i == len(r.ops)-1 {
		return r.finish(o.read.Kind != "")
	}
	return false
}

// finish reads the pending step's state when it has not been (readNow),
// compares it, records the step and takes its differences; true when one
// is the wanted one.
func (r *seqRun) finish(readNow bool) bool {
	o := r.pend
	r.pend = nil
	d := r.d
	if o.read.Kind != "" && readNow {
		both(func() error { o.va = r.a.read(r.ctx, o.read, r.record); return nil },
			func() error { o.vb = r.b.read(r.ctx, d.mapB.op(o.read), r.record); return nil })
	}
	if o.read.Kind != "" {
		p := explore.Partition(o.read)
		if !r.diverged[p] {
			if x := d.compareState(o.op, o.read, r.m, r.a, r.b, o.va, o.vb); x != nil {
				openState(x, r.opened, p, r.ops)
				x.Index = o.i
				o.found = append(o.found, x)
				r.diverged[p] = true
			} else if _, known := modelKnows(r.m, o.read); !known && o.va.err == "" {
				setModel(r.m, o.read, o.va)
				delete(r.opened, p)
			}
		}
	}
	if r.record {
		s := Step{Op: maskOp(o.op), A: observation(o.op, o.ra, o.va), B: observation(r.b.ops[o.i], o.rb, o.vb)}
		s.Differs = len(o.found) > 0
		r.tr.steps = append(r.tr.steps, s)
	}
	for _, x := range o.found {
		if d.noise.ignores(x) {
			continue
		}
		r.tr.diffs = append(r.tr.diffs, x)
		if r.want != nil && x.Key == *r.want {
			r.tr.hit = x
			return true
		}
	}
	return false
}

// resolveLog reads gateway mac's log, which a message at step
// r.logPend[mac] changed and nothing read since, and compares it as if it
// had been read after that step; true when the difference is the wanted
// one.
func (r *seqRun) resolveLog(mac string) bool {
	i := r.logPend[mac]
	delete(r.logPend, mac)
	rd := readOf(r.ops[i])
	p := explore.Partition(rd)
	if r.diverged[p] {
		return false
	}
	var va, vb stateView
	both(func() error { va = r.a.read(r.ctx, rd, false); return nil },
		func() error { vb = r.b.read(r.ctx, r.d.mapB.op(rd), false); return nil })
	x := r.d.compareState(r.ops[i], rd, r.m, r.a, r.b, va, vb)
	if x == nil {
		if _, known := modelKnows(r.m, rd); !known && va.err == "" {
			setModel(r.m, rd, va)
			delete(r.opened, p)
		}
		return false
	}
	openState(x, r.opened, p, r.ops)
	x.Index = i
	r.diverged[p] = true
	if r.d.noise.ignores(x) {
		return false
	}
	r.tr.diffs = append(r.tr.diffs, x)
	if r.want != nil && x.Key == *r.want {
		r.tr.hit = x
		return true
	}
	return false
}

// begin resets the side (unless read-only) and reads its partitions. A
// target whose reset puts it back to its fleet shows the same state after
// every reset: what it showed once is kept, and read again only for
// partitions not yet seen.
func (d *Differ) begin(ctx context.Context, s *sideRun, reads []explore.Op) error {
	s.initial = map[string]stateView{}
	if !d.observed() {
		return nil
	}
	t := s.side.Target
	if err := t.ResetState(ctx); err != nil {
		return err
	}
	fresh := d.fresh[s.idx]
	if !t.Resets() {
		fresh = nil
	}
	var missing []explore.Op
	for _, r := range reads {
		if v, ok := fresh[explore.Partition(r)]; ok {
			s.initial[explore.Partition(r)] = v
			continue
		}
		missing = append(missing, r)
	}
	res := t.ReadAll(ctx, missing)
	for i, r := range missing {
		v := view(res[i])
		s.initial[explore.Partition(r)] = v
		if fresh != nil && v.err == "" {
			fresh[explore.Partition(r)] = v
		}
	}
	return ctx.Err()
}

// read reads r on the side; with curl, the view carries the read's curl
// line for the report.
func (s *sideRun) read(ctx context.Context, r explore.Op, curl bool) stateView {
	res := s.side.Target.Do(ctx, r)
	v := view(res)
	if curl {
		v.curl = explore.Curl(r, res)
	}
	return v
}
