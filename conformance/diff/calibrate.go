package diff

import (
	"context"
	"fmt"

	"github.com/gwdmi/gwtools/conformance/explore"
)

// calibrate sends the same sequences to A twice, each from a reset, and
// takes every answer and state key that differed between the two runs as
// noise: what an implementation does differently from one run to the next
// (times, identifiers it makes up, anything the texts do not fix) is not a
// difference between two implementations. It needs A to reset.
func (d *Differ) calibrate(ctx context.Context) error {
	a := d.cfg.A
	if a.Target.Observer == "" || !a.Target.Reset {
		d.rep.Notes = append(d.rep.Notes, "--calibrate compared answers only: A has no observer that resets")
	}
	sent := 0
	for round := 0; sent < d.cfg.CalibrateOperations; round++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Rounds of their own seed, not the comparison's.
		ops := d.Sequence(d.cfg.Seed^0x5ca1ab1e, round)
		if len(ops) == 0 {
			break
		}
		first, err := d.runA(ctx, ops)
		if err != nil {
			return err
		}
		second, err := d.runA(ctx, ops)
		if err != nil {
			return err
		}
		sent += len(ops)
		m := explore.NewModel(a.World, d.cfg.Rules)
		for i, op := range ops {
			x, y := first[i], second[i]
			if !op.IsRead() && x.answer != y.answer {
				j := explore.Classify(d.cfg.Rules, op, m.Judge(op), explore.Result{})
				d.noise.answers[j.Rule+"|"+string(op.Kind)] = fmt.Sprintf("%s: %s, then %s", op, x.answer, y.answer)
			}
			if x.state.dev != nil && y.state.dev != nil {
				for _, k := range deviceDiff(*x.state.dev, *y.state.dev, nil) {
					if d.noise.state[k] == "" {
						d.noise.state[k] = fmt.Sprintf("%s after %s: %s, then %s", k, op, valueOf(x.state, k), valueOf(y.state, k))
					}
				}
			} else if x.state.log != nil && !sameLog(x.state.log, y.state.log) && d.noise.state["messages"] == "" {
				d.noise.state["messages"] = fmt.Sprintf("after %s: %s, then %s", op, x.state, y.state)
			}
		}
	}
	d.rep.Calibrated = sent
	return nil
}

type calStep struct {
	answer string
	state  stateView
}

// runA runs ops on A from a reset, reading what each step concerns after
// it.
func (d *Differ) runA(ctx context.Context, ops []explore.Op) ([]calStep, error) {
	t := d.cfg.A.Target
	if err := t.ResetState(ctx); err != nil {
		return nil, err
	}
	out := make([]calStep, len(ops))
	for i, op := range ops {
		r := t.Do(ctx, op)
		if !op.IsRead() {
			out[i].answer = answerClass(r)
		}
		if ro := readOf(op); ro.Kind != "" && t.Observer != "" {
			out[i].state = view(t.Do(ctx, ro))
		}
	}
	return out, ctx.Err()
}
