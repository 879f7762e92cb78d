// Package diff sends the same generated operations to two implementations
// of the interface and reports every difference in their answers and in
// the state their observers show, each shrunk to the shortest sequence
// that still shows it and judged against the harness's rule table
// (docs/diff.md). It reuses explore's generator, model and
// shrinker: what differs is the judge, which here is the other target.
package diff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/conformance/explore"
)

// Side is one of the two targets: its implementation and observer, and
// the world its fleet describes.
type Side struct {
	Target *explore.Target
	World  *explore.World
}

// Config is one comparison.
type Config struct {
	A, B Side
	// Rules are the oracle's (explore.OracleRules) when nil.
	Rules explore.Rules
	Seed  int64
	// Operations bounds the operations compared (shrinking not counted),
	// Duration the time; both zero: explore.DefaultOperations.
	Operations int
	Duration   time.Duration
	// Clients > 1 sends each sequence from that many concurrent clients,
	// the same on both sides.
	Clients int
	// RoundLength is the operations of one sequence (explore's default).
	RoundLength int
	// ShrinkBudget bounds the time spent shrinking one difference.
	ShrinkBudget time.Duration
	// ReadOnly sends only requests the rule table says change nothing
	// (refusals) and reads, and never resets.
	ReadOnly bool
	// Calibrate first sends the same operations to A twice, from two
	// resets, and ignores what differed there.
	Calibrate bool
	// CalibrateOperations is how many operations calibration sends to A,
	// twice (default: a tenth of Operations, at least 500).
	CalibrateOperations int
	// ProbeOpen also sends requests whose one doubtful value is a form the
	// texts leave open (explore.Generator.OpenForms): where the two read it
	// apart, the difference says both are allowed. Not in read-only mode,
	// where the rule table cannot say an open form changes nothing.
	ProbeOpen bool
	// Progress gets a line every few seconds; nil: none.
	Progress io.Writer
}

// Differ compares two targets.
type Differ struct {
	cfg   Config
	gen   *explore.Generator
	mapB  *mapper
	noise *noise
	sent  int // operations sent to each side, shrinking included
	rep   *Report
	start time.Time
	// fresh is what each side (A, B) showed of each partition right after
	// a reset.
	fresh [2]map[string]stateView
}

// New checks cfg: the two worlds must have the same shape (accounts,
// gateways, devices and their types, in fleet order), since an operation
// on A's n-th device goes to B's n-th device.
func New(cfg Config) (*Differ, error) {
	if cfg.A.Target == nil || cfg.B.Target == nil || cfg.A.World == nil || cfg.B.World == nil {
		return nil, errors.New("diff: two targets and their worlds are needed")
	}
	if cfg.Rules == nil {
		cfg.Rules = explore.OracleRules()
	}
	if cfg.Operations < 0 || cfg.Duration < 0 || cfg.Clients < 0 || cfg.RoundLength < 0 {
		return nil, errors.New("diff: operations, duration, clients and sequence length must not be negative")
	}
	if cfg.Operations == 0 && cfg.Duration == 0 {
		cfg.Operations = explore.DefaultOperations
	}
	if cfg.RoundLength == 0 {
		cfg.RoundLength = explore.DefaultRoundLength
		if cfg.Clients > 1 {
			cfg.RoundLength = 20 * cfg.Clients
		}
	}
	if cfg.ShrinkBudget == 0 {
		cfg.ShrinkBudget = 20 * time.Second
	}
	if cfg.CalibrateOperations == 0 {
		cfg.CalibrateOperations = max(500, cfg.Operations/10)
	}
	if cfg.ReadOnly {
		cfg.A.Target.Reset, cfg.B.Target.Reset = false, false
	}
	m, err := newMapper(cfg.A.World, cfg.B.World)
	if err != nil {
		return nil, err
	}
	g := &explore.Generator{W: cfg.A.World, Rules: cfg.Rules, Clients: cfg.Clients, OpenForms: cfg.ProbeOpen, WireForms: true}
	return &Differ{cfg: cfg, gen: g, mapB: m, noise: &noise{answers: map[string]string{}, state: map[string]string{}},
		fresh: [2]map[string]stateView{{}, {}}}, nil
}

// Sent is how many operations went to each side, shrinking included.
func (d *Differ) Sent() int { return d.sent }

// Sequence is round i's operations (in A's terms): in read-only mode only
// those the rule table says change nothing.
func (d *Differ) Sequence(seed int64, round int) []explore.Op {
	if !d.cfg.ReadOnly {
		return d.gen.Sequence(seed, round, d.cfg.RoundLength)
	}
	m := explore.NewModel(d.cfg.A.World, d.cfg.Rules)
	var out []explore.Op
	for draw := 0; len(out) < d.cfg.RoundLength && draw < 50; draw++ {
		for _, op := range d.gen.Sequence(seed, round*50+draw, d.cfg.RoundLength) {
			if ChangesNothing(m, op) {
				out = append(out, op)
			}
			if len(out) == d.cfg.RoundLength {
				break
			}
		}
	}
	return out
}

// changesNothing says whether the rule table says each of ops changes
// nothing.
func (d *Differ) changesNothing(ops []explore.Op) bool {
	m := explore.NewModel(d.cfg.A.World, d.cfg.Rules)
	for _, op := range ops {
		if !ChangesNothing(m, op) {
			return false
		}
	}
	return true
}

// ChangesNothing says whether the rule table says op changes nothing: a
// read, or a request it refuses (not an Open form, whose effect it does
// not know).
func ChangesNothing(m *explore.Model, op explore.Op) bool {
	if op.IsRead() {
		return true
	}
	if explore.WireNeedsClock(op.Wire) {
		// Refused only if the target's clock agrees with ours to within
		// seconds: a production service's may not.
		return false
	}
	v := m.Judge(op)
	return !v.Open && v.Expect.Status != 200
}

// Run compares until the budget is spent. The error is for a target that
// cannot be used at all.
func (d *Differ) Run(ctx context.Context) (*Report, error) {
	cfg := d.cfg
	rep := &Report{Seed: cfg.Seed, A: describeSide(cfg.A), B: describeSide(cfg.B), ReadOnly: cfg.ReadOnly,
		Reset: cfg.A.Target.Reset && cfg.B.Target.Reset && !cfg.ReadOnly, ProbeOpen: cfg.ProbeOpen && !cfg.ReadOnly}
	d.rep = rep
	if cfg.Clients > 1 {
		rep.Clients = cfg.Clients
	}
	if cfg.A.Target.Observer == "" || cfg.B.Target.Observer == "" {
		rep.Notes = append(rep.Notes, "state not compared: each side needs an observer answering the CONTRACT 7 reads; only answers were compared")
	}
	start := time.Now()
	d.start = start
	if cfg.Calibrate && !cfg.ReadOnly {
		if err := d.calibrate(ctx); err != nil {
			return nil, err
		}
		rep.Ignored = d.noise.list()
	} else if cfg.Calibrate {
		rep.Notes = append(rep.Notes, "--calibrate is not run in read-only mode: it needs two resets of A")
	}
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = time.Now().Add(cfg.Duration)
	}
	lastProgress := time.Now()
	compared := 0
	for round := 0; ; round++ {
		if ctx.Err() != nil || (cfg.Operations > 0 && compared >= cfg.Operations) || (!deadline.IsZero() && time.Now().After(deadline)) {
			break
		}
		ops := d.Sequence(cfg.Seed, round)
		if len(ops) == 0 {
			break
		}
		if cfg.Operations > 0 && compared+len(ops) > cfg.Operations {
			ops = ops[:cfg.Operations-compared]
		}
		rep.Rounds++
		var found []*Difference
		var err error
		if cfg.Clients > 1 {
			found, err = d.concurrentRound(ctx, ops)
		} else {
			var tr *trace
			tr, err = d.execute(ctx, ops, nil)
			if tr != nil {
				found = tr.diffs
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				rep.Notes = append(rep.Notes, "interrupted: the last sequence was not finished")
				break
			}
			return nil, err
		}
		compared += len(ops)
		for _, x := range found {
			if err := d.record(ctx, ops, x, round); err != nil {
				return nil, err
			}
		}
		if cfg.Progress != nil && time.Since(lastProgress) > 5*time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(cfg.Progress, "diff: %d operations compared in %d sequences, %d difference(s), %d distinct (%.0f/s)\n",
				compared, rep.Rounds, rep.Total(), len(rep.Differences), float64(compared)/time.Since(start).Seconds())
		}
	}
	rep.Operations = compared
	el := time.Since(start)
	rep.Elapsed = el.Round(time.Millisecond).String()
	if s := el.Seconds(); s > 0 {
		rep.OpsPerSec = float64(compared) / s
	}
	sort.SliceStable(rep.Differences, func(i, j int) bool {
		a, b := rep.Differences[i], rep.Differences[j]
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Operation < b.Operation
	})
	return rep, nil
}

func describeSide(s Side) string {
	o := explore.RedactURLs(s.Target.BaseURL)
	if s.Target.Observer != "" && s.Target.Observer != s.Target.BaseURL {
		o += " (observer " + explore.RedactURLs(s.Target.Observer) + ")"
	}
	return o
}

// record counts a difference with the distinct one of its key, or shrinks
// it and adds it as a new one.
func (d *Differ) record(ctx context.Context, ops []explore.Op, x *Difference, round int) error {
	for _, g := range d.rep.Differences {
		if g.Key != x.Key {
			continue
		}
		g.Count++
		if g.Reproducible || g.tries >= maxShrinkTries {
			return nil
		}
		// Its first occurrence did not show again (a target that cannot
		// be reset carries state from earlier sequences): shrink this
		// one instead, up to maxShrinkTries times.
		g.tries++
		if err := d.shrink(ctx, ops, x); err != nil {
			return err
		}
		if x.Reproducible {
			x.Count, x.Round, x.FoundAfter, x.tries = g.Count, g.Round, g.FoundAfter, g.tries
			*g = *x
		}
		return nil
	}
	x.Count, x.Round = 1, round
	x.FoundAfter = time.Since(d.start).Round(time.Millisecond).String()
	if err := d.shrink(ctx, ops, x); err != nil {
		return err
	}
	d.rep.Differences = append(d.rep.Differences, x)
	return nil
}

// maxShrinkTries is how many later occurrences of a difference whose
// shrunk sequence did not show it again are shrunk in its place.
const maxShrinkTries = 10

// shrink makes x's sequence the shortest found that still shows a
// difference of x's key, sent sequentially, and records its steps.
func (d *Differ) shrink(ctx context.Context, ops []explore.Op, x *Difference) error {
	prefix := ops
	if x.Index < len(ops) {
		prefix = ops[:x.Index+1]
	}
	seq := make([]explore.Op, len(prefix))
	for i, op := range prefix {
		op.Client = 0
		seq[i] = op
	}
	if x.Kind == "answer" {
		// An answer depends on the fleet and the request alone: try the
		// one operation first.
		op := x.Op
		op.Client = 0
		if tr, err := d.execute(ctx, []explore.Op{op}, &x.Key); err == nil && tr.hit != nil {
			seq = []explore.Op{op}
		}
	}
	x.Original = len(seq)
	start := time.Now()
	sh := &explore.Shrinker{Rules: d.cfg.Rules, World: d.cfg.A.World, Budget: d.cfg.ShrinkBudget,
		Fails: func(c []explore.Op) bool {
			if d.cfg.ReadOnly && !d.changesNothing(c) {
				// A candidate the shrinker made valid (a device moved to
				// its account's key, a form dropped): never sent read-only.
				return false
			}
			tr, err := d.execute(ctx, c, &x.Key)
			return err == nil && tr.hit != nil
		}}
	shrunk := seq
	if tr, err := d.execute(ctx, seq, &x.Key); err == nil && tr.hit != nil {
		shrunk = sh.Shrink(seq)
	}
	x.ShrinkRuns, x.ShrinkTime = sh.Runs, time.Since(start).Round(time.Millisecond).String()
	tr, err := d.execute(ctx, shrunk, &x.Key)
	if err != nil {
		return err
	}
	x.Ops, x.Steps, x.Reproducible = shrunk, tr.steps, tr.hit != nil
	if tr.hit != nil {
		// The shrunk sequence's own view of the difference.
		x.A, x.B, x.Index, x.Op, x.Expected = tr.hit.A, tr.hit.B, tr.hit.Index, tr.hit.Op, tr.hit.Expected
		x.Verdict, x.VerdictWhy, x.Judgement, x.keys = tr.hit.Verdict, tr.hit.VerdictWhy, tr.hit.Judgement, tr.hit.keys
	}
	return nil
}

// trace is one sequential run of a sequence on both sides.
type trace struct {
	diffs []*Difference
	steps []Step
	// hit is the first difference of the wanted key, when one was wanted.
	hit *Difference
}

// sideRun is one side's view of a sequence.
type sideRun struct {
	side    Side
	ops     []explore.Op
	initial map[string]stateView // by partition, as read at the start
	idx     int                  // 0 for A, 1 for B
	results []explore.Result
}

// stateView is a device's or a log's observed state as diff compares it.
type stateView struct {
	dev  *explore.DeviceState
	log  []explore.Msg
	err  string
	curl string // the read's curl line
}

// openState labels a state difference the rule table cannot judge
// because an Open form at step opened[p] made partition p's state
// unknown: each side's state is its reading of that form, which the texts
// allow either way (verdict both).
func openState(x *Difference, opened map[string]int, p string, ops []explore.Op) {
	i, ok := opened[p]
	if !ok || x.Verdict != NotJudged {
		return
	}
	x.Verdict = BothSides
	x.VerdictWhy = fmt.Sprintf("the state follows an Open form (step %d: %s): neither text decides it, so each side's reading is allowed", i+1, ops[i].Note)
	x.Key = strings.Join([]string{x.Rule, x.Operation, "state", x.Verdict}, "|")
}

func (d *Differ) observed() bool {
	return d.cfg.A.Target.Observer != "" && d.cfg.B.Target.Observer != ""
}

// partitions are the devices and logs ops touch, and a read of each.
func (d *Differ) partitions(ops []explore.Op) ([]string, []explore.Op) {
	seen := map[string]bool{}
	var parts []string
	var reads []explore.Op
	for _, op := range ops {
		r := readOf(op)
		if r.Kind == "" {
			continue
		}
		if r.Kind == explore.ReadDevice && d.cfg.A.World.DeviceType(r.MAC, r.SN) == "" {
			continue
		}
		if r.Kind == explore.ReadMessages && d.cfg.A.World.AccountOf(r.MAC) == "" {
			continue
		}
		p := explore.Partition(r)
		if !seen[p] {
			seen[p] = true
			parts, reads = append(parts, p), append(reads, r)
		}
	}
	return parts, reads
}

// readOf is the read that shows what op may change; Kind "" for none.
func readOf(op explore.Op) explore.Op {
	switch op.Kind {
	case explore.Message, explore.ReadMessages:
		return explore.Op{Kind: explore.ReadMessages, MAC: op.MAC}
	}
	if op.SN == "" {
		return explore.Op{}
	}
	return explore.Op{Kind: explore.ReadDevice, MAC: op.MAC, SN: op.SN}
}

func view(r explore.Result) stateView {
	switch {
	case r.Err != "":
		return stateView{err: r.Err}
	case r.Device != nil:
		d := r.Device.Clone()
		return stateView{dev: &d}
	}
	return stateView{log: r.Messages}
}

func setModel(m *explore.Model, r explore.Op, v stateView) {
	switch {
	case v.dev != nil:
		m.SetDeviceState(r.MAC, r.SN, *v.dev)
	case r.Kind == explore.ReadMessages && v.err == "":
		m.SetLog(r.MAC, v.log)
	}
}

func modelKnows(m *explore.Model, r explore.Op) (stateView, bool) {
	if r.Kind == explore.ReadDevice {
		d, ok := m.DeviceState(r.MAC, r.SN)
		return stateView{dev: &d}, ok
	}
	l, ok := m.Log(r.MAC)
	return stateView{log: l}, ok
}

// both runs f and g at once and returns the first error.
func both(f, g func() error) error {
	var wg sync.WaitGroup
	var eg error
	wg.Add(1)
	go func() { defer wg.Done(); eg = g() }()
	ef := f()
	wg.Wait()
	if ef != nil {
		return ef
	}
	return eg
}

// concurrentRound sends ops from their clients at once on both sides
// (each side its own clients, both sides at the same time). Answers are
// compared one by one: an answer depends on the fleet and the request
// only, never on the order. The final state is compared only for devices
// and logs one client alone changed, whose end state does not depend on
// the interleaving.
func (d *Differ) concurrentRound(ctx context.Context, ops []explore.Op) ([]*Difference, error) {
	parts, reads := d.partitions(ops)
	a := &sideRun{side: d.cfg.A, ops: ops}
	b := &sideRun{side: d.cfg.B, ops: d.mapB.ops(ops), idx: 1}
	if err := both(func() error { return d.begin(ctx, a, reads) }, func() error { return d.begin(ctx, b, d.mapB.ops(reads)) }); err != nil {
		return nil, err
	}
	run := func(s *sideRun) {
		s.results = make([]explore.Result, len(s.ops))
		byClient := map[int][]int{}
		for i, op := range s.ops {
			byClient[op.Client] = append(byClient[op.Client], i)
		}
		var wg sync.WaitGroup
		for _, idx := range byClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, i := range idx {
					s.results[i] = s.side.Target.Do(ctx, s.ops[i])
				}
			}()
		}
		wg.Wait()
	}
	both(func() error { run(a); return nil }, func() error { run(b); return nil })
	d.sent += len(ops)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := explore.NewModel(d.cfg.A.World, d.cfg.Rules)
	var out []*Difference
	writers := map[string]map[int]bool{}
	for i, op := range ops {
		if op.IsRead() {
			continue
		}
		p := explore.Partition(op)
		if writers[p] == nil {
			writers[p] = map[int]bool{}
		}
		writers[p][op.Client] = true
		if x := d.compareAnswers(op, m.Judge(op), a.results[i], b.results[i]); x != nil && !d.noise.ignores(x) {
			x.Index = i
			out = append(out, x)
		}
	}
	if !d.observed() {
		return out, nil
	}
	var la, lb []explore.Result
	both(func() error { la = a.side.Target.ReadAll(ctx, reads); return nil },
		func() error { lb = b.side.Target.ReadAll(ctx, d.mapB.ops(reads)); return nil })
	for i, p := range parts {
		if len(writers[p]) > 1 {
			continue
		}
		ia, ib := a.initial[p], b.initial[p]
		va, vb := view(la[i]), view(lb[i])
		if ia.err != "" || ib.err != "" || va.err != "" || vb.err != "" {
			continue
		}
		if !sameDelta(ia, va, ib, vb, d.noise) {
			x := d.stateDifference(reads[i], reads[i], nil, ia, ib, va, vb)
			// The partition's operations in order, sent alone, show it.
			last := 0
			for j, op := range ops {
				if explore.Partition(op) == p || explore.Partition(readOf(op)) == p {
					last = j
				}
			}
			x.Index = last
			if !d.noise.ignores(x) {
				out = append(out, x)
			}
		}
	}
	return out, nil
}

// Total is every difference met, counted.
func (r *Report) Total() int {
	n := 0
	for _, x := range r.Differences {
		n += x.Count
	}
	return n
}

// maskOp masks op's api_key as reports do.
func maskOp(op explore.Op) explore.Op { return maskOps([]explore.Op{op})[0] }

func maskOps(ops []explore.Op) []explore.Op {
	out := make([]explore.Op, len(ops))
	for i, op := range ops {
		if op.Key != "" && !strings.HasSuffix(op.Key, "…") {
			op.Key = maskKey(op.Key)
		}
		out[i] = op
	}
	return out
}
