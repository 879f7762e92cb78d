package checks

import (
	"context"
	"fmt"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/internal/control"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// control returns the answer to the valid twin of c in format f (package
// control), sending it the first time it is asked for. The exchange is
// recorded in the check that sent it; a check that reuses it says so in a
// step.
func (env *Suite) control(ctx context.Context, c catalog.Call, f device.Format) control.Result {
	trial.Helper()
	if env.DryRun {
		return control.Result{OK: true}
	}
	key, typ, what, ok := control.Of(&env.Bench, c, f)
	if !ok {
		return control.Result{OK: true} // nothing to compare with; the check skips on its own
	}
	res, done, ex, sentAhead := env.Controls().Take(key)
	if sentAhead {
		// Sent with the other checks of its device: its exchange goes
		// into the first check that uses it.
		trial.From(ctx).By("control: the valid " + what + " was sent with the other checks of its slow device")
		env.Link().Record(ctx, ex)
	}
	if done {
		trial.From(ctx).By("control: the valid " + what + " was " + map[bool]string{true: "accepted", false: "refused"}[res.OK] + " earlier in the run")
		return res
	}
	trial.From(ctx).By("control: sending the valid " + what)
	valid := env.Base(c.Op, key.SN, typ)
	env.PutBack(ctx, valid)
	r, err := env.Link().Exchange(ctx, valid.Request(f))
	switch {
	case err != nil:
		res = control.Result{What: fmt.Sprintf("the valid %s got no answer (%v)", what, err)}
	case !link.Accepted(r):
		res = control.Result{What: fmt.Sprintf("the valid %s was refused (%s)", what, link.Describe(r))}
	default:
		res = control.Result{OK: true}
	}
	env.Controls().Put(key, res)
	return res
}

// caseControl is the control of a case's request in format f.
func (env *Suite) caseControl(ctx context.Context, c catalog.Case, f device.Format) control.Result {
	trial.Helper()
	return env.control(ctx, env.buildCase(ctx, c, f), f)
}
