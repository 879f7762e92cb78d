package explore

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// linTimeout bounds Porcupine's search on one device's history.
const linTimeout = 10 * time.Second

// History is one concurrent run: every operation with its invocation and
// response times, and the model that judged it.
type History struct {
	Ops     []Op
	Results []Result
	model   *Model // the state read at the start
}

// RunConcurrent sends ops from their clients at once, each client's in
// order, then reads every device and log they touched, and records when
// each operation was sent and answered.
func (x *Explorer) RunConcurrent(ctx context.Context, ops []Op) (*History, error) {
	m, err := x.begin(ctx, ops)
	if err != nil {
		return nil, err
	}
	byClient := map[int][]int{}
	last := 1 // the final reads' client: after every other
	for i, op := range ops {
		byClient[op.Client] = append(byClient[op.Client], i)
		last = max(last, op.Client+1)
	}
	h := &History{Ops: append([]Op(nil), ops...), Results: make([]Result, len(ops)), model: m}
	// The clients wait for one another, then start together: a race
	// between their first operations is then as likely as it can be.
	var ready, wg sync.WaitGroup
	gate := make(chan struct{})
	var start time.Time
	for _, idx := range byClient {
		wg.Add(1)
		ready.Add(1)
		go func(idx []int) {
			defer wg.Done()
			ready.Done()
			<-gate
			for _, i := range idx {
				call := time.Since(start).Nanoseconds()
				r := x.cfg.Target.Do(ctx, ops[i])
				r.Call, r.Return = call, time.Since(start).Nanoseconds()
				h.Results[i] = r
			}
		}(idx)
	}
	ready.Wait()
	start = time.Now()
	close(gate)
	wg.Wait()
	x.ops += len(ops)
	// A final read of each device and log, after every client is done.
	var reads []Op
	for k := range m.Devices {
		reads = append(reads, Op{Kind: ReadDevice, MAC: k.MAC, SN: k.SN, Client: last})
	}
	for mac := range m.Logs {
		reads = append(reads, Op{Kind: ReadMessages, MAC: mac, Client: last})
	}
	h.Ops, h.Results = append(h.Ops, reads...), append(h.Results, x.cfg.Target.readAllSince(ctx, reads, start)...)
	x.ops += len(reads)
	return h, ctx.Err()
}

// Violation is a concurrent history that no order of its operations
// explains, or an answer the model did not predict.
type Violation struct {
	// Partition names the device ("mac/sn") or log ("messages mac").
	Partition string
	// Answer is set when an answer (not a state) disagreed.
	Answer *Disagreement
	hist   *History
	ops    []porcupine.Operation
	model  porcupine.Model
	info   porcupine.LinearizationInfo
}

// Check judges a history: first each answer, then each device's and each
// log's operations for linearizability against the model.
func (h *History) Check() *Violation {
	v, _ := h.CheckTolerating(nil)
	return v
}

// CheckTolerating is Check that goes on past each answer disagreement
// stop declines (nil: none), returning those in seen; the devices and logs
// they concern are then not checked for linearizability, since the model
// does not know what those operations did.
func (h *History) CheckTolerating(stop func(*Disagreement) bool) (*Violation, []*Disagreement) {
	var seen []*Disagreement
	skip := map[string]bool{}
	for i, op := range h.Ops {
		r := h.Results[i]
		if op.IsRead() {
			if r.Err != "" {
				return &Violation{Partition: partitionOf(op), hist: h, Answer: &Disagreement{Index: i, Op: op, Got: describe(r), Why: "the observer did not answer: " + r.Err,
					Judgement: judgement(MUST, "C-4.answers"), Key: "observer"}}, seen
			}
			continue
		}
		v := h.model.Judge(op)
		if r.Err != "" || !v.Expect.Matches(r.Answer) {
			d := &Disagreement{Index: i, Op: op, Expected: v.Expect.String(), Got: describe(r),
				Why: fmt.Sprintf("answered %s, gwconform's reading is %s", describe(r), v.Expect)}
			d.Judgement = Classify(h.model.Rules, op, v, r)
			d.Key = answerKey(d.Judgement, op, v, r)
			if stop == nil || stop(d) {
				return &Violation{Partition: partitionOf(op), hist: h, Answer: d}, seen
			}
			seen = append(seen, d)
			skip[partitionOf(op)] = true
		}
	}
	parts := map[string][]porcupine.Operation{}
	for i, op := range h.Ops {
		p := partitionOf(op)
		if p == "" || skip[p] {
			continue
		}
		r := h.Results[i]
		in := linInput{op: op}
		if !op.IsRead() {
			in.v = h.model.Judge(op) // once, not at every step of the search
		}
		parts[p] = append(parts[p], porcupine.Operation{ClientId: op.Client, Input: in, Output: r, Call: r.Call, Return: r.Return})
	}
	for _, p := range sortedKeys(parts) {
		model, ok := h.porcupineModel(p)
		if !ok {
			continue
		}
		// The plain check first: the picture's information costs more and
		// is wanted only for a violation.
		if porcupine.CheckOperationsTimeout(model, parts[p], linTimeout) != porcupine.Illegal {
			continue
		}
		res, info := porcupine.CheckOperationsVerbose(model, parts[p], linTimeout)
		if res == porcupine.Illegal {
			return &Violation{Partition: p, hist: h, ops: parts[p], model: model, info: info}, seen
		}
	}
	return nil, seen
}

// partitionOf is the device or log whose state op reads or may change;
// "" for operations the model refuses before any device.
func partitionOf(op Op) string {
	switch op.Kind {
	case Message, ReadMessages:
		return "messages " + op.MAC
	}
	return op.device().String()
}

// linInput is an operation of a history with the model's verdict on it.
type linInput struct {
	op Op
	v  Verdict
}

// linDevice is a device's state in Porcupine's search, with its text, which
// Equal and Hash compare.
type linDevice struct {
	d   DeviceState
	key string
}

func newLinDevice(d DeviceState) linDevice { return linDevice{d, d.String()} }

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// hashLog hashes a message log: equal logs hash alike.
func hashLog(l []Msg) uint64 {
	h := fnv.New64a()
	var sep = []byte{0}
	for _, m := range l {
		h.Write([]byte(m.Type))
		h.Write(sep)
		h.Write([]byte(m.Value))
		h.Write(sep)
	}
	return h.Sum64()
}

// porcupineModel is the sequential specification of one device or log,
// from the state read at the start.
func (h *History) porcupineModel(p string) (porcupine.Model, bool) {
	m := h.model
	for k, d := range m.Devices {
		if k.String() == p {
			return porcupine.Model{
				Init: func() any { return newLinDevice(d) },
				Step: func(state, input, output any) (bool, any) {
					s, in, r := state.(linDevice), input.(linInput), output.(Result)
					if in.op.Kind == ReadDevice {
						return r.Device != nil && CheckDevice(s.d, *r.Device) == "", s
					}
					if in.v.Expect.Status == 200 && r.Answer.Success {
						return true, newLinDevice(in.v.apply(s.d))
					}
					return true, s
				},
				Equal:             func(a, b any) bool { return a.(linDevice).key == b.(linDevice).key },
				Hash:              func(a any) uint64 { return hashString(a.(linDevice).key) },
				DescribeOperation: shortOperation,
				DescribeState:     func(s any) string { return s.(linDevice).key },
			}, true
		}
	}
	for mac, log := range m.Logs {
		if "messages "+mac == p {
			return porcupine.Model{
				Init: func() any { return log },
				Step: func(state, input, output any) (bool, any) {
					s, in, r := state.([]Msg), input.(linInput), output.(Result)
					if in.op.Kind == ReadMessages {
						return r.Messages != nil && CheckLog(s, r.Messages) == "", s
					}
					if in.v.Expect.Status == 200 && r.Answer.Success && in.v.Msg != nil {
						return true, append(append([]Msg(nil), s...), *in.v.Msg)
					}
					return true, s
				},
				Equal: func(a, b any) bool {
					x, y := a.([]Msg), b.([]Msg)
					if len(x) != len(y) {
						return false
					}
					for i := range x {
						if x[i] != y[i] {
							return false
						}
					}
					return true
				},
				// Without a hash every log state falls in one bucket of
				// Porcupine's cache, and each lookup compares whole logs
				// with all of them: a quarter of a concurrent run's CPU.
				Hash:              func(a any) uint64 { return hashLog(a.([]Msg)) },
				DescribeOperation: shortOperation,
				DescribeState:     func(s any) string { return describeLog(s.([]Msg)) },
			}, true
		}
	}
	return porcupine.Model{}, false
}

func describeOperation(input, output any) string {
	op, r := input.(linInput).op, output.(Result)
	op.Client = 0
	return fmt.Sprintf("%s → %s", op, describe(r))
}

// shortOperation is describeOperation with the device named by the end of
// its serial number, for the bars of Porcupine's picture.
func shortOperation(input, output any) string {
	op, r := input.(linInput).op, output.(Result)
	op.Client, op.MAC = 0, "…"
	if len(op.SN) > 6 {
		op.SN = op.SN[len(op.SN)-6:]
	}
	return fmt.Sprintf("%s → %s", op, describe(r))
}

// Lines lists the violating history client by client, each operation
// with its times in microseconds from the start.
func (v *Violation) Lines() []string {
	if v.Answer != nil {
		return []string{fmt.Sprintf("%s: %s", v.Answer.Op, v.Answer.Why)}
	}
	ops := append([]porcupine.Operation(nil), v.ops...)
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].ClientId != ops[j].ClientId {
			return ops[i].ClientId < ops[j].ClientId
		}
		return ops[i].Call < ops[j].Call
	})
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = fmt.Sprintf("client %d [%d µs – %d µs] %s", o.ClientId, o.Call/1000, o.Return/1000, describeOperation(o.Input, o.Output))
	}
	return out
}

// steps are the violation's operations client by client, in call order:
// for an answer disagreement, the whole history's.
func (v *Violation) steps() []Step {
	ops := append([]porcupine.Operation(nil), v.ops...)
	if v.Answer != nil && v.hist != nil {
		ops = ops[:0]
		for i, op := range v.hist.Ops {
			r := v.hist.Results[i]
			ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: linInput{op: op}, Output: r, Call: r.Call, Return: r.Return})
		}
	}
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].ClientId != ops[j].ClientId {
			return ops[i].ClientId < ops[j].ClientId
		}
		return ops[i].Call < ops[j].Call
	})
	out := make([]Step, len(ops))
	for i, o := range ops {
		op, r := o.Input.(linInput).op, o.Output.(Result)
		out[i] = Step{Op: op, Got: describe(r), Curl: curl(op, r)}
	}
	return out
}

// Picture writes Porcupine's visualization of the violation into dir.
func (v *Violation) Picture(dir string) (string, error) {
	if v.Answer != nil || dir == "" {
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "explore-linearizability.html")
	return path, porcupine.VisualizePath(v.model, v.info, path)
}

// concurrentRound runs ops from their clients; on a violation it shrinks
// the operations of the violating device or log, running each candidate
// up to five times (a race need not show every time), and keeps the
// shortest violating history.
func (x *Explorer) concurrentRound(ctx context.Context, ops []Op, round int) (*Finding, error) {
	if x.touched == nil {
		x.touched = map[devKey]bool{}
	}
	for _, op := range ops {
		if !op.IsRead() {
			x.touched[op.device()] = true
		}
	}
	h, err := x.RunConcurrent(ctx, ops)
	if err != nil {
		return nil, err
	}
	v, seen := h.CheckTolerating(x.stops)
	for _, d := range seen {
		// An answer depends on the fleet and the request only: the one
		// operation, sent alone, shows it again.
		op := d.Op
		op.Client = 0
		d2 := *d
		d2.Index, d2.Op = 0, op
		if err := x.note(ctx, []Op{op}, &d2, round); err != nil {
			return nil, err
		}
	}
	if v == nil {
		return nil, nil
	}
	f := &Finding{Kind: "linearizability", Original: len(ops), Judgement: linearizabilityJudgement(), key: "linearizability " + v.Partition}
	if v.Answer != nil {
		f.Kind, f.Judgement, f.key = "disagreement", v.Answer.Judgement, v.Answer.Key
	}
	var best *Violation
	bestLen := len(ops) + 1
	start := time.Now()
	const tries = 5
	sh := &Shrinker{Rules: x.cfg.Rules, World: x.cfg.World, Budget: x.cfg.ShrinkBudget,
		Fails: func(c []Op) bool {
			for range tries {
				h, err := x.RunConcurrent(ctx, c)
				if err != nil {
					return false
				}
				if v, _ := h.CheckTolerating(x.stops); v != nil {
					if len(c) <= bestLen {
						best, bestLen = v, len(c)
					}
					return true
				}
			}
			return false
		}}
	// The violating device's or log's operations first: a cheap cut.
	var mine []Op
	for _, op := range ops {
		if partitionOf(op) == v.Partition {
			mine = append(mine, op)
		}
	}
	cand := ops
	if len(mine) > 0 && len(mine) < len(ops) && sh.fails(mine) {
		cand = mine
	}
	cand = sh.ShrinkConcurrent(cand)
	f.Reproducible = best != nil && bestLen == len(cand)
	if !f.Reproducible {
		// The shrunk sequence was last seen passing: show the original.
		best, cand = v, ops
	}
	f.Ops = cand
	f.ShrinkRuns, f.ShrinkTime = sh.Runs, time.Since(start).Round(time.Millisecond).String()
	f.History = best.Lines()
	f.Concurrent = best.steps()
	f.Devices = countDevices(cand)
	if best.Answer != nil {
		f.Kind, f.Disagreement = "disagreement", best.Answer
	} else if x.cfg.ReportDir != "" {
		path, err := best.Picture(x.cfg.ReportDir)
		if err != nil {
			return nil, fmt.Errorf("writing Porcupine's picture: %w", err)
		}
		f.Picture = path
	}
	return f, nil
}
