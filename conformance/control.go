package conformance

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/trial"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// No check passes by default: a check that expects a refusal proves
// something only if the target accepts the same request made valid. Each
// such check has a control, the valid request of its operation, in its
// format, about its device, sent to the same target in the same run; when
// the control is refused, the refusal check is inconclusive, not passed.
// A control is sent once per operation, format and device and its answer
// kept for the run's other checks.

// controlKey names a control: an operation, a format and a device ("" for
// send message).
type controlKey struct {
	op device.Operation
	f  device.Format
	sn string
}

// controlResult is a control's answer: ok when accepted; else what came.
type controlResult struct {
	ok   bool
	what string
}

// control returns the answer to the valid twin of c in format f, sending
// it the first time it is asked for. The exchange is recorded in the check
// that sent it; a check that reuses it says so in a step.
func (env *Env) control(ctx context.Context, c catalog.Call, f device.Format) controlResult {
	ginkgo.GinkgoHelper()
	if env.DryRun {
		return controlResult{ok: true}
	}
	key, typ, what, ok := env.controlOf(c, f)
	if !ok {
		return controlResult{ok: true} // nothing to compare with; the check skips on its own
	}
	sn := key.sn
	env.ctlMu.Lock()
	res, done := env.controls[key]
	ex, sentAhead := env.slow.ctlEx[key]
	delete(env.slow.ctlEx, key)
	env.ctlMu.Unlock()
	if sentAhead {
		// Sent with the other checks of its slow device: its exchange
		// goes into the first check that uses it.
		trial.From(ctx).By("control: the valid " + what + " was sent with the other checks of its slow device")
		env.link().Record(ctx, ex)
	}
	if done {
		trial.From(ctx).By("control: the valid " + what + " was " + map[bool]string{true: "accepted", false: "refused"}[res.ok] + " earlier in the run")
		return res
	}
	trial.From(ctx).By("control: sending the valid " + what)
	valid := env.Base(c.Op, sn, typ)
	env.putBack(ctx, valid)
	r, err := env.link().Exchange(ctx, valid.Request(f))
	switch {
	case err != nil:
		res = controlResult{what: fmt.Sprintf("the valid %s got no answer (%v)", what, err)}
	case !link.Accepted(r):
		res = controlResult{what: fmt.Sprintf("the valid %s was refused (%s)", what, describe(r))}
	default:
		res = controlResult{ok: true}
	}
	env.ctlMu.Lock()
	if env.controls == nil {
		env.controls = map[controlKey]controlResult{}
	}
	env.controls[key] = res
	env.ctlMu.Unlock()
	return res
}

// controlOf names the control of c in format f: its key, the device's
// type and the request in words; ok is false when the fleet has no device
// to send it to.
func (env *Env) controlOf(c catalog.Call, f device.Format) (key controlKey, typ, what string, ok bool) {
	sn, typ := c.SN, c.Type
	if c.Op == device.SendMessage {
		sn, typ = "", ""
	} else if _, ok := env.Target.Devices[typ]; !ok || sn == "" {
		d, ok := env.AnyDevice()
		if !ok {
			return controlKey{}, "", "", false
		}
		sn, typ = d.SN, d.Type
	}
	what = fmt.Sprintf("%s in %s", c.Op.Name(), f)
	if sn != "" {
		what += " to " + typ + " " + sn
	}
	return controlKey{op: c.Op, f: f, sn: sn}, typ, what, true
}

// caseControl is the control of a case's request in format f.
func (env *Env) caseControl(ctx context.Context, c catalog.Case, f device.Format) controlResult {
	ginkgo.GinkgoHelper()
	return env.control(ctx, env.buildCase(ctx, c, f), f)
}

// conclude ends a refusal check whose own assertions held: passed when its
// control was accepted, inconclusive when it was not.
func (r controlResult) conclude(ctx context.Context) {
	ginkgo.GinkgoHelper()
	if !r.ok {
		why := "inconclusive: " + r.what + ": a refusal proves nothing while the valid request is refused too"
		trial.From(ctx).Entry(report.InconclusiveEntry, why, ginkgo.ReportEntryVisibilityNever)
		trial.From(ctx).Skip(why)
	}
}
