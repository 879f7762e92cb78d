package checks

import (
	"context"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/batch"
	"github.com/gwdmi/gwtools/conformance/internal/control"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// declareSim adds the state check of a case, read through the observer
// (CONTRACT 7): after an accepted request the device shows what was sent;
// after a rejected one nothing changed. The effect of a request the
// published interface calls valid is a MUST; of one only the CONTRACT
// calls valid, and the rule that a rejected request changes nothing, a
// SHOULD. They carry the tags sim and effect, and are skipped, with the
// one line of NotObservedPrefix, when the run has no observer.
func (env *Suite) declareSim(c catalog.Case, f device.Format, id string) {
	valid := c.Want.OK || c.Want.ContractOK
	level := check.Should
	if c.Want.OK {
		level = check.Must
	}
	m := caseMeta(&c, id+".sim", level, f, capital(c.Title)+": the state the observer shows follows", "", "sim", "effect")
	m.Section, m.Contract = "3", "3"
	// It judges the state, by CONTRACT 3 and 7, not the sentence that
	// refuses the request.
	m.Quote, m.Inference = "", ""
	switch {
	case c.Want.OK:
		m.Section, m.Contract = c.Section, ""
		m.Assertion = capital(c.Title) + " MUST leave the device or gateway as the request said, as the observer shows it (CONTRACT 7)."
	case valid:
		m.Assertion = capital(c.Title) + " SHOULD leave the state the observer shows exactly as the request said (CONTRACT 3)."
	default:
		m.Assertion = capital(c.Title) + " SHOULD be rejected and change nothing the observer shows (CONTRACT 3)."
	}
	body := func(ctx context.Context) {
		if why := env.ObserveSkip(); why != "" {
			trial.From(ctx).Skip(why)
		}
		var ctl control.Result
		if !valid {
			ctl = env.caseControl(ctx, c, f)
		}
		var t *fleet.Target
		var why string
		if valid {
			// On a slow device without a stand-in: judged from its lane
			// when it passed there (package batch), else alone as below.
			if env.Batch().InLane(ctx, m.ID, c, f) {
				return
			}
			if trial.From(ctx).IsLive() {
				t, _, why = env.Batch().StandIn(c, f)
			} else if env.Batch().SlowWithStandIn(c) {
				// A stand-in sets the run's target for the check: never
				// while other devices' checks run beside it (package engine, ahead.go).
				trial.From(ctx).InPlace("its device is slow: it runs in its place, where it may move to a stand-in")
			}
		}
		var before, after observer.State
		var sent catalog.Call
		var r *client.Response
		env.onStandIn(ctx, t, why, func() {
			req := env.buildCase(ctx, c, f)
			before = env.snapshot(ctx, req)
			if valid && req.Op == device.SendMessage && !batch.Fetched(ctx) {
				before = env.distinctLog(ctx, req, f, before)
			}
			sent, r = env.sendCaseCall(ctx, c, f)
			after = env.snapshot(ctx, req)
		})
		if !valid {
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeFalse(), "an invalid request was accepted: %s", link.Describe(r))
			trial.From(ctx).Expect(after.Device).To(gomega.Equal(before.Device), "a rejected request changed the device")
			trial.From(ctx).Expect(before.Log.UnchangedBy(after.Log, observer.Message{Type: sent.Get(device.FieldMessageType), Value: sent.Get(device.FieldMessageValue)})).To(gomega.BeTrue(), "a rejected request changed the gateway's messages (%s)", before.Log.Change(after.Log))
			ctl.Conclude(ctx)
			return
		}
		trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid request was not accepted: %s", link.Describe(r))
		expectApplied(ctx, sent, before, after, !c.Want.OK)
	}
	if env.Observer == "" {
		env.ItAbout(m, env.CaseKey(c, f), body) // it says why it is skipped
		return
	}
	if valid {
		// A valid value's state check: on a slow device with no stand-in,
		// sent in its device's lane (package batch).
		env.Plan(m, batch.Plan{Case: c, Formats: []device.Format{f}, Kind: batch.ValidState})
		env.ItAbout(m, env.CaseKey(c, f), body)
		return
	}
	// A refusal's state check changes nothing when the target is right:
	// on a slow device it reads, sends and reads with the others.
	env.ItPlanned(m, batch.Plan{Case: c, Formats: []device.Format{f}, Kind: batch.RefusalState, Refusal: true}, body)
}

// distinctLog makes a message check conclusive on a log that keeps only
// its last N messages, for any N: when the message about to be sent is
// already the newest of the gateway's (the same message sent by the
// check's twin in the other format), a message of the run's own, unlike
// any other, is sent first, and the log read again once it shows it.
func (env *Suite) distinctLog(ctx context.Context, c catalog.Call, f device.Format, before observer.State) observer.State {
	trial.Helper()
	m := observer.Message{Type: c.Get(device.FieldMessageType), Value: c.Get(device.FieldMessageValue)}
	if before.Log.Counted || before.Log.Shared || before.Log.Last == nil || *before.Log.Last != m {
		return before
	}
	trial.From(ctx).By("the message to send is already the newest of the gateway's: a message of the run's own goes first, so that any log shows whether this one comes")
	other := env.Base(device.SendMessage, "", "")
	r, err := env.Link().Exchange(ctx, other.Request(f))
	if err != nil || !link.Accepted(r) {
		return before
	}
	l, err := env.Link().ReadLog(ctx, env.Target.MAC)
	if err != nil {
		failRead(ctx, "reading the messages", err)
	}
	before.Log = l
	return before
}

// onStandIn runs body with the run's target set to t (the slow device's
// stand-in): the check builds, sends, reads back and arranges the put-back
// for the stand-in. The checks of a process run one at a time, and
// nothing else reads env.Target meanwhile (batch.Sender.SlowNote reads
// the fleet).
func (env *Suite) onStandIn(ctx context.Context, t *fleet.Target, why string, body func()) {
	trial.Helper()
	if t == nil {
		body()
		return
	}
	trial.From(ctx).By(why)
	saved := env.Target
	env.Target = t
	defer func() { env.Target = saved }()
	body()
}

// snapshot is what the observer shows about the device and gateway a call
// concerns, or what was fetched for the check ahead (package batch).
func (env *Suite) snapshot(ctx context.Context, c catalog.Call) observer.State {
	trial.Helper()
	if st, ok := batch.Replay(ctx, true); ok {
		return *st.State
	}
	var s observer.State
	if c.SN != "" {
		d, err := env.Link().ReadDevice(ctx, env.Target.MAC, c.SN)
		if err != nil {
			failRead(ctx, "reading the device", err)
		}
		s.Device = &d
	}
	if c.Op != device.SendMessage {
		// The message log only changes by send message; reading it (up to
		// a thousand entries) for every command would cost more than the
		// rest of the check.
		return s
	}
	l, err := env.Link().ReadLog(ctx, env.Target.MAC)
	if err != nil {
		failRead(ctx, "reading the messages", err)
	}
	s.Log = l
	return s
}

// expectApplied checks that an accepted call did what it said. strict
// holds the CONTRACT's forms too (an enumerated value in its published
// case); without it, a MUST check, letter case is not judged.
func expectApplied(ctx context.Context, c catalog.Call, before, after observer.State, strict bool) {
	trial.Helper()
	switch c.Op {
	case device.SendCommand:
		// The type's fields and their kinds are the harness's own rule
		// table's (oracle), never the simulator's.
		t, ok := oracle.LookupType(c.Get(device.FieldType))
		trial.From(ctx).Expect(ok).To(gomega.BeTrue(), "the check sent type %q, which the published interface does not have", c.Get(device.FieldType))
		want := map[string]any{}
		for k, v := range before.Device.State {
			want[k] = v
		}
		// The expected state is written here from what was sent, not by
		// the simulator's own parsing or apply code: a bug in the shared
		// domain code cannot hide itself.
		for i := range t.Fields {
			fd := &t.Fields[i]
			for _, kv := range c.Fields {
				if kv.Name == fd.Name && kv.Wire == "" {
					v, ok := catalog.Canonical(fd, kv.Value, kv.Num)
					trial.From(ctx).Expect(ok).To(gomega.BeTrue(), "the check sent %q for %s, which has no canonical form", kv.Value, fd.Name)
					want[fd.Name] = v
				}
			}
		}
		got, exp := observer.Values(after.Device.State), observer.Values(want)
		if !strict {
			catalog.FoldEnums(t, got)
			catalog.FoldEnums(t, exp)
		}
		trial.From(ctx).Expect(got).To(gomega.Equal(exp), "device state after the command")
		trial.From(ctx).Expect(after.Device.Name).To(gomega.Equal(before.Device.Name), "the command changed the name")
	case device.SendMessage:
		m := observer.Message{Type: c.Get(device.FieldMessageType), Value: c.Get(device.FieldMessageValue)}
		if why := before.Log.GainedMessage(after.Log, m); why != "" {
			if before.Log.Indistinct(after.Log, m) {
				why = "inconclusive: the message sent was already the newest of the gateway's " + strconv.Itoa(len(after.Log.All)) +
					" and the log did not grow: a log that keeps only its last messages cannot show whether this one came"
				trial.From(ctx).Entry(report.InconclusiveEntry, why, ginkgo.ReportEntryVisibilityNever)
				trial.From(ctx).Skip(why)
			}
			trial.From(ctx).Fail(why)
		}
	case device.UpdateName:
		trial.From(ctx).Expect(after.Device.Name).To(gomega.Equal(strings.TrimSpace(c.Get(device.FieldName))), "name after update_name")
		trial.From(ctx).Expect(observer.Values(after.Device.State)).To(gomega.Equal(observer.Values(before.Device.State)), "update_name changed the state")
	}
}
