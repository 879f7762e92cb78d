package explore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

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
}

// Disagreement is where target and model parted first.
type Disagreement struct {
	Index    int    `json:"index"`
	Op       Op     `json:"op"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
	Why      string `json:"why"`
}

// Finding is the first disagreement of an exploration, shrunk.
type Finding struct {
	// Kind is "disagreement" (an answer or an observed state the model
	// did not predict) or "linearizability" (concurrent histories no
	// order of the operations explains).
	Kind  string `json:"kind"`
	Round int    `json:"round"`
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
	Seed       int64    `json:"seed"`
	Target     string   `json:"target"`
	Observer   string   `json:"observer,omitempty"`
	Clients    int      `json:"clients,omitempty"`
	Rounds     int      `json:"rounds"`
	Operations int      `json:"operations"`
	Elapsed    string   `json:"elapsed"`
	OpsPerSec  float64  `json:"operations_per_second"`
	Found      *Finding `json:"finding,omitempty"`
	// Notes says what was not judged (no observer: "effects not observed").
	Notes []string `json:"notes,omitempty"`
}

// Explorer runs sequences against a target and judges them.
type Explorer struct {
	cfg Config
	gen *Generator
	ops int // operations sent, shrinking included
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
	cfg.Target.rules = cfg.Rules
	g := &Generator{W: cfg.World, Rules: cfg.Rules, Reads: cfg.Target.Observer != "", Clients: cfg.Clients}
	return &Explorer{cfg: cfg, gen: g}, nil
}

// Sent is how many operations were sent, shrinking included.
func (x *Explorer) Sent() int { return x.ops }

// Sequence is round i's operations.
func (x *Explorer) Sequence(round int) []Op {
	return x.gen.Sequence(x.cfg.Seed, round, x.cfg.RoundLength)
}

// Run explores until the budget is spent or a disagreement is found, and
// shrinks that. The error is for a target that cannot be used at all.
func (x *Explorer) Run(ctx context.Context) (*Report, error) {
	cfg := x.cfg
	rep := &Report{Seed: cfg.Seed, Target: RedactURLs(cfg.Target.BaseURL), Observer: RedactURLs(cfg.Target.Observer)}
	if cfg.Clients > 1 {
		rep.Clients = cfg.Clients
	}
	if cfg.Target.Observer == "" {
		rep.Notes = append(rep.Notes, "effects not observed: no observer answers the CONTRACT 7 reads, so only answers were judged")
	}
	start := time.Now()
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = start.Add(cfg.Duration)
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
		if !deadline.IsZero() && time.Now().After(deadline) {
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
			f, err = x.concurrentRound(ctx, ops)
		} else {
			f, err = x.sequentialRound(ctx, ops)
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
			break
		}
		sent += len(ops)
		if cfg.Progress != nil && time.Since(lastProgress) > 5*time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(cfg.Progress, "explore: %d operations in %d sequences, no disagreement yet (%.0f/s)\n",
				sent, rep.Rounds, float64(sent)/time.Since(start).Seconds())
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

// sequentialRound runs ops; on a disagreement it shrinks them.
func (x *Explorer) sequentialRound(ctx context.Context, ops []Op) (*Finding, error) {
	d, _, err := x.Execute(ctx, ops, false)
	if err != nil || d == nil {
		return nil, err
	}
	f := &Finding{Kind: "disagreement", Original: d.Index + 1}
	start := time.Now()
	sh := &Shrinker{Rules: x.cfg.Rules, World: x.cfg.World, Budget: x.cfg.ShrinkBudget,
		Fails: func(c []Op) bool {
			d, _, err := x.Execute(ctx, c, false)
			return err == nil && d != nil
		}}
	f.Ops = sh.Shrink(ops[:d.Index+1])
	f.ShrinkRuns, f.ShrinkTime = sh.Runs, time.Since(start).Round(time.Millisecond).String()
	d2, steps, err := x.Execute(ctx, f.Ops, true)
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
	m, err := x.begin(ctx, ops)
	if err != nil {
		return nil, nil, err
	}
	var steps []Step
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		res := x.cfg.Target.Do(ctx, op)
		x.ops++
		want, why := x.judge(m, op, res, record)
		if record {
			steps = append(steps, Step{Op: op, Expected: want, Got: describe(res), Disagrees: why != "", Why: why, Curl: curl(op, res)})
		}
		if why != "" {
			return &Disagreement{Index: i, Op: op, Expected: want, Got: describe(res), Why: why}, steps, nil
		}
	}
	return nil, steps, nil
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
			why = CheckLog(l, res.Messages)
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
	case !v.Expect.Matches(res.Answer):
		why = fmt.Sprintf("answered %s, the texts say %s", res.Answer, v.Expect)
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

// RedactURLs hides the password of each comma-separated URL, so that a
// report or a message never carries the credentials a target or observer
// URL holds.
func RedactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}
