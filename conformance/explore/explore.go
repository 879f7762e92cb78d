package explore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

// Config is one exploration.
type Config struct {
	Target *Target
	World  *World
	// Rules judge values; the harness's rule table (gatewayapi/oracle)
	// when nil.
	Rules Rules
	Seed  int64
	// Operations bounds the operations sent in all (shrinking not
	// counted); Duration bounds the time. Zero: no bound of that kind;
	// both zero: DefaultOperations.
	Operations int
	Duration   time.Duration
	// Clients > 1 sends from that many concurrent clients to shared
	// devices and checks each device's history for linearizability.
	Clients int
	// RoundLength is the operations of one sequence; each starts from a
	// reset (when the observer offers one) and fresh reads of the state.
	RoundLength int
	// ShrinkBudget bounds the time spent shrinking (DefaultShrinkBudget).
	ShrinkBudget time.Duration
	// ReportDir receives Porcupine's picture of a violation; empty: none.
	ReportDir string
	// Progress gets one line per few seconds; nil: none.
	Progress io.Writer
	// FailOn is the lowest level of a disagreement that stops the run and
	// fails it: MUST (the default) or SHOULD. A disagreement below it is
	// listed once, shrunk, and the run goes on.
	FailOn string
	// Skip lists rules (IDs or globs of conformance/rules) whose
	// disagreements are neither reported nor stop the run; they are
	// counted.
	Skip []string
	// Known says why a rule's disagreements are known failures (a
	// baseline entry), "" when they are not: a known one is listed and
	// does not stop or fail the run.
	Known func(rule string) string
	// Settle is how long a device or a message log may take to show a
	// change its gateway already acknowledged (gwconform run's --settle):
	// a read that disagrees with the model within that time of the last
	// change sent to it is read again until it agrees or the time is up.
	// Zero: the first read decides. Concurrent histories (Clients > 1)
	// are judged as read: linearizability has no room for late effects.
	Settle time.Duration
	// Space starts the run with a sweep of the space the fleet opens
	// (Generator.Sweep) and draws effects and isolation groups among the
	// random operations (space.go).
	Space bool
	// MinKept is how many of a gateway's newest messages the observer
	// must show at least (MinMessagesKept when 0): CONTRACT lets a service
	// keep only its last N, for any N of 1 or more.
	MinKept int
	// ShrinkUnsettled reads the state as it is while shrinking, through a
	// target made with NewVia, rather than waiting for accepted changes to
	// appear: against a target that never shows a change, each candidate
	// would otherwise cost the time changes may take. The shrunk sequence
	// is run once more with waiting, and says whether it still disagrees.
	ShrinkUnsettled bool
	// ShrinkTimeApart keeps the time spent shrinking out of Duration: the
	// budget is the time spent exploring, and each finding's shrinking
	// has ShrinkBudget of its own.
	ShrinkTimeApart bool
	// NoLogReads reads no message log: others append to the logs
	// meanwhile (Generator.NoLogReads).
	NoLogReads bool
	// GoOn: no disagreement stops the run; each distinct one is listed,
	// shrunk (up to MaxShrunk), and the run goes on to the end of its
	// budget, as gwconform run's phase does to reach the whole space.
	GoOn bool
	// MaxShrunk, when above 0, shrinks only that many distinct
	// disagreements that do not stop the run; the others are listed as
	// they were met (Finding.ShrinkRuns 0, no steps).
	MaxShrunk int
	// RestoreRound puts the devices back as the failing sequence found
	// them before each shrinking candidate and the shrunk sequence's last
	// run, on a target that cannot be reset: what a sequence shows may
	// depend on what its devices held (a command that sets the value a
	// device already has shows nothing).
	RestoreRound bool
	// Latitudes judges answers with every latitude CONTRACT's preamble
	// gives a faithful service: a replay (a request sent again with the
	// timestamp and sign of one accepted before) may be refused; an error
	// code the texts do not name, and the field an error names, are never
	// judged. Off, every code and field the rule table predicts is judged.
	Latitudes bool
}

// Defaults of Config.
const (
	DefaultOperations   = 2000
	DefaultRoundLength  = 100
	DefaultShrinkBudget = 60 * time.Second
)

// Step is one operation of a reported sequence with what the model
// expected and what came.
type Step struct {
	Op       Op     `json:"op"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
	// Disagrees marks the step where target and model part.
	Disagrees bool   `json:"disagrees,omitempty"`
	Why       string `json:"why,omitempty"`
	// Curl sends the request again, signed afresh (gwconform sign).
	Curl string `json:"curl,omitempty"`
	// Exchange is the request and answer as sent (POST operations).
	Exchange client.Exchange `json:"-"`
}

// Disagreement is where target and model parted first.
type Disagreement struct {
	Index    int    `json:"index"`
	Op       Op     `json:"op"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
	Why      string `json:"why"`
	Judgement
	// Key tells distinct disagreements apart: the rule, the operation and
	// what was expected and came, without the values.
	Key string `json:"key,omitempty"`
}

// Finding is the first disagreement of an exploration, shrunk.
type Finding struct {
	// Kind is "disagreement" (an answer or an observed state the model
	// did not predict) or "linearizability" (concurrent histories no
	// order of the operations explains).
	Kind  string `json:"kind"`
	Round int    `json:"round"`
	// Level, Rule and Quote place the finding (level.go).
	Judgement
	// Count is how many times it was met (once a sequence at most).
	Count int `json:"count"`
	// Known is the baseline's reason when the rule's failures are known.
	Known string `json:"known,omitempty"`
	// Script is the reproduction file written for it.
	Script string `json:"script,omitempty"`
	key    string
	// Original is how many operations the failing sequence had up to the
	// disagreement; Ops is the shrunk sequence, Steps it as last run.
	Original     int           `json:"original_operations"`
	Ops          []Op          `json:"operations"`
	Steps        []Step        `json:"steps,omitempty"`
	Disagreement *Disagreement `json:"disagreement,omitempty"`
	// History lists a linearizability violation's operations, client by
	// client; Picture is Porcupine's visualization file, if written.
	History []string `json:"history,omitempty"`
	// Concurrent is the violating history's operations client by client
	// with what came and their curl lines, for the script.
	Concurrent []Step `json:"concurrent,omitempty"`
	Picture    string `json:"picture,omitempty"`
	Devices    int    `json:"devices"`
	ShrinkRuns int    `json:"shrink_runs"`
	ShrinkTime string `json:"shrink_time"`
	// Reproducible says the shrunk sequence disagreed again when run last.
	Reproducible bool `json:"reproducible"`
}

// Report is the outcome of an exploration.
type Report struct {
	Seed       int64   `json:"seed"`
	Target     string  `json:"target"`
	Observer   string  `json:"observer,omitempty"`
	Clients    int     `json:"clients,omitempty"`
	Rounds     int     `json:"rounds"`
	Operations int     `json:"operations"`
	Elapsed    string  `json:"elapsed"`
	OpsPerSec  float64 `json:"operations_per_second"`
	// Found is the finding that stopped the run (at or above FailOn, not
	// known, not skipped); nil when none did.
	Found *Finding `json:"finding,omitempty"`
	// Findings lists every distinct disagreement, in the order met, Found
	// included.
	Findings []*Finding `json:"findings,omitempty"`
	// FailOn is the level that fails the run; Skipped counts the
	// disagreements of skipped rules, by rule.
	FailOn  string         `json:"fail_on"`
	Skipped map[string]int `json:"skipped,omitempty"`
	// Notes says what was not judged (no observer: "effects not observed").
	Notes []string `json:"notes,omitempty"`
}

// Failed reports whether the run fails: a finding at or above FailOn that
// is not a known failure.
func (r *Report) Failed() bool {
	for _, f := range r.Findings {
		if f.Known == "" && atLeast(f.Level, r.FailOn) {
			return true
		}
	}
	return r.Found != nil
}

// atLeast reports whether level is at least min (MUST above SHOULD).
func atLeast(level, min string) bool {
	return level == MUST || min == SHOULD || min == ""
}

// Explorer runs sequences against a target and judges them.
type Explorer struct {
	cfg Config
	gen *Generator
	ops int // operations sent, shrinking included
	rep *Report
	// touched lists the devices POSTs were sent to, for Touched.
	touched map[devKey]bool
	// cov counts what the run reached of the space, shrinking not
	// counted (shrinking is true meanwhile).
	cov       Coverage
	shrinking bool
	// deadline ends a sequence part way, once the run's time is up
	// (shrinking aside); cut is how many operations of the last sequence
	// were sent, when it was ended so.
	deadline time.Time
	cut      int
	// start is the state the last sequence found its devices in
	// (RestoreRound).
	start []Saved
}

// Coverage is what the run reached of the space the fleet opens.
func (x *Explorer) Coverage() []Dimension { return x.cov.Space(x.cfg.Rules, x.cfg.World) }

// Touched lists the devices of the world the run sent a POST to, as
// "mac/sn": the devices to put back after the run.
func (x *Explorer) Touched() [][2]string {
	var out [][2]string
	for _, k := range x.cfg.World.Devices() {
		if x.touched[k] {
			out = append(out, [2]string{k.MAC, k.SN})
		}
	}
	return out
}

// New checks cfg.
func New(cfg Config) (*Explorer, error) {
	if cfg.Target == nil || cfg.World == nil {
		return nil, errors.New("explore: a target and a world are needed")
	}
	if cfg.Rules == nil {
		cfg.Rules = OracleRules()
	}
	if cfg.Operations < 0 || cfg.Duration < 0 || cfg.Clients < 0 || cfg.RoundLength < 0 {
		return nil, errors.New("explore: operations, duration, clients and round length must not be negative")
	}
	if cfg.Operations == 0 && cfg.Duration == 0 {
		cfg.Operations = DefaultOperations
	}
	if cfg.RoundLength == 0 {
		cfg.RoundLength = DefaultRoundLength
		if cfg.Clients > 1 {
			cfg.RoundLength = 20 * cfg.Clients
		}
	}
	if cfg.ShrinkBudget == 0 {
		cfg.ShrinkBudget = DefaultShrinkBudget
	}
	switch strings.ToUpper(cfg.FailOn) {
	case "", MUST:
		cfg.FailOn = MUST
	case SHOULD:
		cfg.FailOn = SHOULD
	default:
		return nil, fmt.Errorf("explore: fail-on %q: must or should", cfg.FailOn)
	}
	cfg.Target.rules = cfg.Rules
	cfg.Target.renewReplays = cfg.Latitudes
	g := &Generator{W: cfg.World, Rules: cfg.Rules, Reads: cfg.Target.Observer != "", Clients: cfg.Clients, AroundRefusals: true,
		Space: cfg.Space && cfg.Clients <= 1, NoLogReads: cfg.NoLogReads}
	return &Explorer{cfg: cfg, gen: g}, nil
}

// Sent is how many operations were sent, shrinking included.
func (x *Explorer) Sent() int { return x.ops }

// Sequence is round i's operations.
func (x *Explorer) Sequence(round int) []Op {
	if round == 0 && x.gen.Space {
		return x.gen.Sweep(x.cfg.Seed)
	}
	return x.gen.Sequence(x.cfg.Seed, round, x.cfg.RoundLength)
}

// Run explores until the budget is spent or a disagreement is found, and
// shrinks that. The error is for a target that cannot be used at all.
func (x *Explorer) Run(ctx context.Context) (*Report, error) {
	cfg := x.cfg
	rep := &Report{Seed: cfg.Seed, Target: RedactURLs(cfg.Target.BaseURL), Observer: RedactURLs(cfg.Target.Observer), FailOn: cfg.FailOn}
	x.rep = rep
	if cfg.Clients > 1 {
		rep.Clients = cfg.Clients
	}
	if cfg.Target.Observer == "" {
		rep.Notes = append(rep.Notes, "effects not observed: no observer answers the CONTRACT 7 reads, so only answers were judged")
	}
	start := time.Now()
	if cfg.Duration > 0 {
		x.deadline = start.Add(cfg.Duration)
	}
	lastProgress := start
	sent := 0
	for round := 0; ; round++ {
		if ctx.Err() != nil {
			break
		}
		if cfg.Operations > 0 && sent >= cfg.Operations {
			break
		}
		if !x.deadline.IsZero() && time.Now().After(x.deadline) {
			break
		}
		ops := x.Sequence(round)
		if cfg.Operations > 0 && sent+len(ops) > cfg.Operations {
			ops = ops[:cfg.Operations-sent]
		}
		rep.Rounds++
		var f *Finding
		var err error
		if cfg.Clients > 1 {
			f, err = x.concurrentRound(ctx, ops, round)
		} else {
			f, err = x.sequentialRound(ctx, ops, round)
		}
		if err != nil {
			if ctx.Err() != nil {
				// Interrupted: what ran so far is the report.
				rep.Notes = append(rep.Notes, "interrupted: the last sequence was not finished")
				break
			}
			return nil, err
		}
		if f != nil {
			sent += f.Original
			f.Round = round
			rep.Found = f
			x.add(f)
			break
		}
		if x.cut > 0 {
			sent += x.cut
			break
		}
		sent += len(ops)
		if cfg.Progress != nil && time.Since(lastProgress) > 5*time.Second {
			lastProgress = time.Now()
			seen := "no disagreement yet"
			if n := len(rep.Findings); n > 0 {
				seen = fmt.Sprintf("%d distinct disagreement(s) below --fail-on %s or known, none stopping", n, strings.ToLower(cfg.FailOn))
			}
			fmt.Fprintf(cfg.Progress, "explore: %d operations in %d sequences, %s (%.0f/s)\n",
				sent, rep.Rounds, seen, float64(sent)/time.Since(start).Seconds())
		}
	}
	rep.Operations = sent
	el := time.Since(start)
	rep.Elapsed = el.Round(time.Millisecond).String()
	if s := el.Seconds(); s > 0 {
		rep.OpsPerSec = float64(x.ops) / s
	}
	return rep, nil
}

// sequentialRound runs ops; on a disagreement that stops the run it
// shrinks it; one that does not is noted (once per kind) and the
// sequence goes on.
func (x *Explorer) sequentialRound(ctx context.Context, ops []Op, round int) (*Finding, error) {
	d, seen, _, err := x.execute(ctx, ops, false, x.stops)
	if err != nil {
		return nil, err
	}
	for _, s := range seen {
		if err := x.note(ctx, ops[:s.Index+1], s, round); err != nil {
			return nil, err
		}
	}
	if d == nil {
		return nil, nil
	}
	return x.shrunk(ctx, ops[:d.Index+1], d, x.stops)
}

// stops says whether a disagreement stops the run: not skipped, not
// known, at or above FailOn.
func (x *Explorer) stops(d *Disagreement) bool {
	if x.cfg.GoOn {
		return false
	}
	return !x.skipped(d.Rule) && x.known(d.Rule) == "" && atLeast(d.Level, x.cfg.FailOn)
}

func (x *Explorer) skipped(rule string) bool {
	for _, p := range x.cfg.Skip {
		if rules.Match(p, rule) {
			return true
		}
	}
	return false
}

func (x *Explorer) known(rule string) string {
	if x.cfg.Known == nil || rule == "" {
		return ""
	}
	return x.cfg.Known(rule)
}

// note lists a disagreement that did not stop the run: counted when its
// kind was met before, else shrunk (to a sequence showing a disagreement
// of the same key) and added.
func (x *Explorer) note(ctx context.Context, ops []Op, d *Disagreement, round int) error {
	if x.skipped(d.Rule) {
		if x.rep.Skipped == nil {
			x.rep.Skipped = map[string]int{}
		}
		x.rep.Skipped[d.Rule]++
		return nil
	}
	for _, f := range x.rep.Findings {
		if f.key == d.Key {
			f.Count++
			return nil
		}
	}
	key := d.Key
	if x.cfg.MaxShrunk > 0 && len(x.rep.Findings) >= x.cfg.MaxShrunk {
		f := &Finding{Kind: "disagreement", Original: d.Index + 1, Judgement: d.Judgement, key: d.Key, Ops: ops,
			Disagreement: d, Devices: countDevices(ops), Round: round}
		x.add(f)
		return nil
	}
	f, err := x.shrunk(ctx, ops, d, func(d *Disagreement) bool { return d.Key == key })
	if err != nil {
		return err
	}
	f.Round = round
	x.add(f)
	return nil
}

// add lists f among the findings, with its known reason.
func (x *Explorer) add(f *Finding) {
	for _, g := range x.rep.Findings {
		if g == f {
			return
		}
		if g.key == f.key && f.key != "" {
			g.Count++
			return
		}
	}
	if f.Count == 0 {
		f.Count = 1
	}
	f.Known = x.known(f.Rule)
	x.rep.Findings = append(x.rep.Findings, f)
}

// shrunk shrinks ops, which end in disagreement d, to a shortest sequence
// that still ends in one stop accepts, and runs that again to record its
// steps.
func (x *Explorer) shrunk(ctx context.Context, ops []Op, d *Disagreement, stop func(*Disagreement) bool) (*Finding, error) {
	f := &Finding{Kind: "disagreement", Original: d.Index + 1, Judgement: d.Judgement, key: d.Key}
	start := time.Now()
	x.shrinking = true
	defer func() {
		x.shrinking = false
		if x.cfg.ShrinkTimeApart && !x.deadline.IsZero() {
			x.deadline = x.deadline.Add(time.Since(start))
		}
	}()
	sh := &Shrinker{Rules: x.cfg.Rules, World: x.cfg.World, Budget: x.cfg.ShrinkBudget,
		Fails: func(c []Op) bool {
			d, _, _, err := x.execute(ctx, c, false, stop)
			return err == nil && d != nil
		}}
	x.cfg.Target.unsettled.Store(x.cfg.ShrinkUnsettled)
	f.Ops = sh.Shrink(ops)
	x.cfg.Target.unsettled.Store(false)
	f.ShrinkRuns, f.ShrinkTime = sh.Runs, time.Since(start).Round(time.Millisecond).String()
	x.shrinking = x.cfg.RestoreRound // the last run from the same state
	d2, _, steps, err := x.execute(ctx, f.Ops, true, stop)
	x.shrinking = false
	if err != nil {
		return nil, err
	}
	f.Steps, f.Reproducible = steps, d2 != nil
	if d2 == nil {
		d2 = d // flaky: report the original disagreement
	}
	f.Disagreement = d2
	f.Devices = countDevices(f.Ops)
	return f, nil
}

func countDevices(ops []Op) int {
	seen := map[devKey]bool{}
	for _, op := range ops {
		if op.SN != "" {
			seen[op.device()] = true
		}
	}
	return len(seen)
}

// Execute runs ops one after the other from a reset and fresh reads of the
// state they concern, and stops at the first disagreement. With record it
// returns every step. The error is for a context cancelled.
func (x *Explorer) Execute(ctx context.Context, ops []Op, record bool) (*Disagreement, []Step, error) {
	d, _, steps, err := x.execute(ctx, ops, record, func(*Disagreement) bool { return true })
	return d, steps, err
}

// execute is Execute that goes on past each disagreement stop declines:
// those are returned in seen, and the model takes what came (the state
// observed; a device or log an answer may have changed becomes unknown,
// to be learnt again at its next read).
func (x *Explorer) execute(ctx context.Context, ops []Op, record bool, stop func(*Disagreement) bool) (first *Disagreement, seen []*Disagreement, steps []Step, err error) {
	m, err := x.begin(ctx, ops)
	if err != nil {
		return nil, nil, nil, err
	}
	// changedBy lists, by device or log, the POSTs sent to it since it was
	// read: what a state disagreement's level depends on.
	changedBy := map[string][]Op{}
	// changedAt is when the last POST to each device or log was answered:
	// a read within Settle of it may wait for the change to appear.
	changedAt := map[string]time.Time{}
	if x.touched == nil {
		x.touched = map[devKey]bool{}
	}
	// expecting lists, by device or log, whether the model expects a
	// change there since it was last read: a read through NewVia's target
	// waits for the changes accepted only then (a change the model does
	// not expect, because it expects a refusal, is not waited for).
	expecting := map[string]bool{}
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		if !x.shrinking && !record && !x.deadline.IsZero() && i > 0 && time.Now().After(x.deadline) {
			x.cut = i // the run's time is up
			break
		}
		var v Verdict
		learn := false
		switch op.Kind {
		case ReadDevice:
			_, known := m.Devices[op.device()]
			learn = !known
		case ReadMessages:
			_, known := m.Logs[op.MAC]
			learn = !known
		default:
			v = m.Judge(op)
			x.touched[op.device()] = true
			if v.Expect.Status == 200 || v.Open {
				expecting[partitionOf(op)] = true
			}
		}
		if op.IsRead() {
			x.cfg.Target.quiet.Store(!expecting[partitionOf(op)])
			expecting[partitionOf(op)] = false
		}
		res := x.cfg.Target.Do(ctx, op)
		x.cfg.Target.quiet.Store(false)
		x.ops++
		if !op.IsRead() && !x.shrinking {
			x.cov.add(x.cfg.Rules, x.cfg.World, op, v)
		}
		var want, why string
		if x.fairReplay(op, res) {
			// A replay refused: CONTRACT 1 lets a service do so. The model
			// takes it as the refusal it is, which changes nothing.
			want = "200 success, or a replay's refusal"
		} else {
			want, why = x.judge(m, op, res, record)
		}
		if at, ok := changedAt[partitionOf(op)]; ok && why != "" && op.IsRead() && res.Err == "" && x.cfg.Settle > 0 {
			res, want, why = x.settle(ctx, m, op, at.Add(x.cfg.Settle), res, want, why, record)
		}
		if record {
			steps = append(steps, Step{Op: op, Expected: want, Got: describe(res), Disagrees: why != "", Why: why, Curl: curl(op, res), Exchange: res.Exchange})
		}
		if learn && res.Err == "" {
			adopt(m, op, res)
		}
		if !op.IsRead() {
			p := partitionOf(op)
			changedBy[p] = append(changedBy[p], op)
			changedAt[p] = time.Now()
		}
		if why == "" {
			continue
		}
		d := &Disagreement{Index: i, Op: op, Expected: want, Got: describe(res), Why: why}
		if op.IsRead() {
			d.Judgement = stateJudgement(x.softState(m, op, res, changedBy[partitionOf(op)]))
			keys := "log"
			if op.Kind == ReadDevice {
				keys = stateKeys(why)
			}
			d.Key = fmt.Sprintf("%s|%s|%s|%s", d.Rule, d.Level, op.Kind, keys)
		} else {
			d.Judgement = Classify(x.cfg.Rules, op, v, res)
			d.Key = answerKey(d.Judgement, op, v, res)
		}
		if stop(d) {
			return d, seen, steps, nil
		}
		seen = append(seen, d)
		switch {
		case op.IsRead():
			if res.Err == "" {
				adopt(m, op, res)
			}
		case res.Err != "" || v.Expect.Status == 200 || res.Answer.Success:
			// It may have changed what the model thinks it did not, or not
			// changed what it thinks it did.
			delete(m.Devices, op.device())
			delete(m.Logs, op.MAC)
		}
	}
	return nil, seen, steps, nil
}

// fairReplay says whether res is a replay's refusal CONTRACT 1 allows: a
// POST answered 401 replayed_request whose operation, fields and
// timestamp (in either format) the target was sent before (Result.Again):
// a shrinking candidate sends its operations again, often within the
// second. A refusal of a request sent before for another reason is
// allowed too: a service may check a request's faults in any order.
func (x *Explorer) fairReplay(op Op, res Result) bool {
	return x.cfg.Latitudes && !op.IsRead() && res.Err == "" && res.Answer.Status == 401 &&
		res.Answer.Code == device.CodeReplayedRequest && res.Again
}

// settle reads op's device or log again, every settlePoll, until what it
// shows agrees with the model or the deadline passes; it gives the last
// read and its judgement.
func (x *Explorer) settle(ctx context.Context, m *Model, op Op, deadline time.Time, res Result, want, why string, record bool) (Result, string, string) {
	for why != "" && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return res, want, why
		case <-time.After(settlePoll):
		}
		again := x.cfg.Target.Do(ctx, op)
		x.ops++
		if again.Err != "" {
			return res, want, why
		}
		res = again
		want, why = x.judge(m, op, res, record)
	}
	return res, want, why
}

// settlePoll is how often a read waiting for a change is sent again.
const settlePoll = 25 * time.Millisecond

// softState says whether a state disagreement is only the CONTRACT's:
// every part of the state that differs either shows a value a refused
// request tried to set (CONTRACT 3: a rejected request changes nothing)
// or was set by a request only the CONTRACT calls valid. Anything else
// (an accepted, published request not shown, a message lost) is MUST.
func (x *Explorer) softState(m *Model, op Op, res Result, changed []Op) bool {
	refusedTried := func(key, value string) bool {
		for _, c := range changed {
			if m.Judge(c).Expect.Status == 200 {
				continue
			}
			for _, kv := range c.Fields {
				if (kv.Key == key || key == "message") && (sameValue(kv.Value, value) || strings.EqualFold(kv.Value, value)) {
					return true
				}
			}
		}
		return false
	}
	setSoftly := func(key string) bool {
		soft := false
		for _, c := range changed {
			v := m.Judge(c)
			if v.Expect.Status != 200 {
				continue
			}
			_, sets := v.Set[key]
			switch {
			case sets || (key == "name" && v.SetName) || (key == "message" && v.Msg != nil):
				soft = !must(x.cfg.Rules, c) // the last one decides
			case !must(x.cfg.Rules, c) && c.device() == op.device():
				// A request only the CONTRACT calls valid came after it,
				// to this device, without this key: what it did to the
				// key is the CONTRACT's to say ("fields absent keep their
				// value").
				soft = true
			}
		}
		return soft
	}
	switch {
	case op.Kind == ReadDevice && res.Device != nil:
		want, ok := m.Devices[op.device()]
		if !ok {
			return false
		}
		got := *res.Device
		if want.Name != got.Name && !refusedTried("name", got.Name) && !setSoftly("name") {
			return false
		}
		for k, w := range want.State {
			if g, ok := got.State[k]; !ok || !sameValue(w, g) {
				if !ok || (!refusedTried(k, g) && !setSoftly(k)) {
					return false
				}
			}
		}
		return true
	case op.Kind == ReadMessages && res.Messages != nil:
		want := m.Logs[op.MAC]
		if len(res.Messages) > len(want) {
			last := res.Messages[len(res.Messages)-1]
			return refusedTried("message", last.Value)
		}
		return len(res.Messages) == len(want) && setSoftly("message")
	}
	return false
}

// adopt takes an observed state into the model.
func adopt(m *Model, op Op, res Result) {
	switch {
	case op.Kind == ReadDevice && res.Device != nil:
		m.Devices[op.device()] = res.Device.clone()
	case op.Kind == ReadMessages && res.Messages != nil:
		m.Logs[op.MAC] = append([]Msg(nil), res.Messages...)
	}
}

// answerKey tells distinct answer disagreements apart: rule, level,
// operation, and the status and code expected and got (not the field: a
// refusal that names another field is the same disagreement).
func answerKey(j Judgement, op Op, v Verdict, res Result) string {
	got := "no answer"
	if res.Err == "" {
		got = fmt.Sprintf("%d %s %v", res.Answer.Status, res.Answer.Code, res.Answer.Success)
	}
	want := fmt.Sprintf("%d %v %v", v.Expect.Status, v.Expect.Codes, v.Expect.Any)
	return strings.Join([]string{j.Rule, j.Level, string(op.Kind), want, got}, "|")
}

// stateKeys are the state keys a state disagreement names, without their
// values ("name; dimming").
func stateKeys(why string) string {
	var keys []string
	for _, part := range strings.Split(why, "; ") {
		k, _, _ := strings.Cut(part, " ")
		k, _, _ = strings.Cut(k, "=")
		keys = append(keys, k)
	}
	return strings.Join(keys, ";")
}

// begin resets the target (when it can be) and reads the state of every
// device and log ops touch into a new model.
func (x *Explorer) begin(ctx context.Context, ops []Op) (*Model, error) {
	t := x.cfg.Target
	t.turn.Store(0) // a sequence meets the replicas in the same order each time
	m := NewModel(x.cfg.World, x.cfg.Rules)
	if t.Observer == "" {
		return m, nil
	}
	if err := t.reset(ctx); err != nil {
		return nil, err
	}
	if x.cfg.RestoreRound && x.shrinking && len(x.start) > 0 {
		var keys [][2]string
		for _, s := range x.start {
			keys = append(keys, [2]string{s.MAC, s.SN})
		}
		t.Restore(ctx, x.start, keys)
	}
	if x.cfg.RestoreRound && !x.shrinking {
		x.start = nil
	}
	devs, logs := map[devKey]bool{}, map[string]bool{}
	for _, op := range ops {
		if _, ok := x.cfg.World.devs[op.device()]; ok && op.SN != "" && op.Kind != Message {
			devs[op.device()] = true
		}
		if _, ok := x.cfg.World.gwOf[op.MAC]; ok && (op.Kind == Message || op.Kind == ReadMessages) {
			logs[op.MAC] = true
		}
	}
	var reads []Op
	for _, k := range x.cfg.World.Devices() {
		if devs[k] {
			reads = append(reads, Op{Kind: ReadDevice, MAC: k.MAC, SN: k.SN})
		}
	}
	for _, mac := range x.cfg.World.Gateways() {
		if logs[mac] {
			reads = append(reads, Op{Kind: ReadMessages, MAC: mac})
		}
	}
	res := t.readAll(ctx, reads)
	x.ops += len(reads)
	for i, op := range reads {
		r := res[i]
		if op.Kind == ReadDevice {
			if r.Err != "" {
				return nil, fmt.Errorf("reading the state of %s: %s", op.device(), r.Err)
			}
			m.Devices[op.device()] = *r.Device
			if x.cfg.RestoreRound && !x.shrinking {
				x.start = append(x.start, Saved{MAC: op.MAC, SN: op.SN, Type: x.cfg.World.devs[op.device()], Name: r.Device.Name, State: r.Device.Clone().State})
			}
			continue
		}
		if r.Err != "" {
			return nil, fmt.Errorf("reading the messages of %s: %s", op.MAC, r.Err)
		}
		m.Logs[op.MAC] = r.Messages
	}
	return m, ctx.Err()
}

// judge steps the model with op and compares what came: why they
// disagree ("" when they agree) and, when verbose or they disagree, the
// prediction as text.
func (x *Explorer) judge(m *Model, op Op, res Result, verbose bool) (want, why string) {
	switch op.Kind {
	case ReadDevice:
		d, known := m.Devices[op.device()]
		switch {
		case !known:
			return "(not known)", ""
		case res.Err != "":
			why = "the observer did not answer: " + res.Err
		default:
			why = CheckDevice(d, *res.Device)
		}
		if verbose || why != "" {
			want = d.String()
		}
		return want, why
	case ReadMessages:
		l, known := m.Logs[op.MAC]
		switch {
		case !known:
			return "(not known)", ""
		case res.Err != "":
			why = "the observer did not answer: " + res.Err
		default:
			why = CheckLogKept(l, res.Messages, x.cfg.MinKept)
		}
		if verbose || why != "" {
			want = describeLog(l)
		}
		return want, why
	}
	v := m.Step(op)
	switch {
	case res.Err != "":
		why = "no answer: " + res.Err
	case x.cfg.Latitudes && v.Expect.MatchesLeniently(res.Answer):
	case !v.Expect.Matches(res.Answer):
		why = fmt.Sprintf("answered %s, gwconform's reading is %s", res.Answer, v.Expect)
	}
	if verbose || why != "" {
		want = v.Expect.String()
	}
	return want, why
}

func describe(r Result) string {
	switch {
	case r.Err != "":
		return "no answer: " + r.Err
	case r.Device != nil:
		return r.Device.String()
	case r.Messages != nil:
		return describeLog(r.Messages)
	}
	return r.Answer.String()
}

func describeLog(l []Msg) string {
	if len(l) == 0 {
		return "no messages"
	}
	const show = 5
	s := fmt.Sprintf("%d messages", len(l))
	from := max(0, len(l)-show)
	if from > 0 {
		s += ", newest"
	}
	s += ":"
	for _, m := range l[from:] {
		s += fmt.Sprintf(" %s=%q", m.Type, m.Value)
	}
	return s
}

// Replay runs a finding's shrunk sequence again, writes each step (or the
// history) to w and reports whether the target still disagrees. A
// concurrent finding is tried up to ten times.
func (x *Explorer) Replay(ctx context.Context, f *Finding, w io.Writer) (bool, error) {
	g := *f
	g.Ops = x.cfg.Target.Unmask(f.Ops)
	f = &g
	if f.Kind == "linearizability" {
		for try := 1; try <= 10; try++ {
			h, err := x.RunConcurrent(ctx, f.Ops)
			if err != nil {
				return false, err
			}
			if v := h.Check(); v != nil {
				for _, l := range v.Lines() {
					fmt.Fprintln(w, l)
				}
				if path, err := v.Picture(x.cfg.ReportDir); err == nil && path != "" {
					fmt.Fprintln(w, "Porcupine's picture:", path)
				}
				return true, nil
			}
		}
		return false, nil
	}
	d, steps, err := x.Execute(ctx, f.Ops, true)
	if err != nil {
		return false, err
	}
	for i, s := range steps {
		mark := " "
		if s.Disagrees {
			mark = "!"
		}
		fmt.Fprintf(w, "%s %2d. %s\n       expected %s\n       got      %s\n", mark, i+1, s.Op, s.Expected, printable.String(s.Got))
	}
	if d != nil {
		fmt.Fprintf(w, "disagrees at operation %d: %s\n", d.Index+1, printable.String(d.Why))
	}
	return d != nil, nil
}

// RedactURLs drops the user information (user and password) of each
// comma-separated URL, so that a report or a message never carries the
// credentials a target or observer URL holds.
func RedactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}
