package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/batch"
	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Devices side by side. Ginkgo runs a process's checks one at a time, in
// their place, in the order declared (declareChecks); against a target
// across a network each waits for its round trips. So once the target is
// found far (batch.Sender.Far), the checks about
// one device, or about the tested gateway's messages, run ahead of their
// place a stretch at a time, each device's in a chain, the devices side
// by side (schedule.Ahead), all within the run's one bound of requests in
// flight (link.Link.Slot). A request is written, timestamp and sign, when
// it goes (client.Request.Renew), so a timestamp a second from the
// window's edge means what it tests in a chain as well. The effect checks,
// which change one device and watch every other, a slow device's state
// checks that may move to a stand-in (package batch), and every check of a run
// sent one request at a time (--concurrency 1, a dry run, --max-requests)
// run in their place.

// declareAhead registers a check that will run in this process, in the
// order of the run. A check that runs in its place (key nil) ends a
// stretch: no check declared after it runs before it.
func (env *Env) declareAhead(m check.Meta, key func() string, body func(context.Context)) {
	if !env.filter.willRun(check.Finish(m)) {
		return
	}
	if !env.mayRunAhead() {
		key = nil
	}
	env.ahead.Declare(schedule.Check{ID: m.ID, Key: key, Body: body, Expect: env.expected[m.ID]})
}

// CaseKey is what a case's requests in format f touch, for the chains:
// the device it names, or the tested gateway's messages (a case about
// another gateway or account names a device no chain of the tested
// gateway touches, or that gateway's messages, which only the effect
// checks read).
func (env *Env) CaseKey(c catalog.Case, f device.Format) func() string {
	return func() string { return batch.DeviceOf(&env.Bench, c, f) }
}

// mayRunAhead says whether the run may send several requests at once.
func (env *Env) mayRunAhead() bool {
	return env.collect == nil && !env.DryRun && env.MaxRequests == 0 && env.InFlight() >= 2
}

// runCheck runs a check in its place (schedule.Ahead.Run): a check about
// one device that finds the target far first runs ahead the checks of its
// stretch that have not started.
func (env *Env) runCheck(ctx context.Context, id string, body func(context.Context)) {
	env.ahead.Run(ctx, id, body, func() bool { return env.Batch().Far() && !env.Link().Stopped() })
}

// aheadRun says what ran ahead of its place, for the reports (nil when
// nothing did).
func (env *Env) aheadRun() *report.Ahead {
	checks, chains, took := env.ahead.Ran()
	if checks == 0 {
		return nil
	}
	return &report.Ahead{Checks: checks, Chains: chains, Seconds: math.Round(took.Seconds()*100) / 100}
}

// AheadNote is the progress line's part on the checks run ahead: how
// many of them have run, and the chain expected to end last with its
// expected end ("" when none runs ahead).
func (env *Env) AheadNote() string {
	p, ok := env.ahead.Progress()
	if !ok {
		return ""
	}
	ch, ok := p.Longest()
	if !ok {
		return ""
	}
	s := fmt.Sprintf("%d checks run ahead, devices side by side; the last to end: %s, %d of %d checks", p.Done(), env.chainName(ch.Key), ch.Done, ch.Total)
	if ch.Left > 0 {
		s += fmt.Sprintf(", about %s left", ch.Left.Round(time.Second))
	}
	return s
}

// keepAhead puts into r the results of checks run ahead of their place
// that the run never reached in their place (it was interrupted, or
// stopped): a check that passed ahead passed, one skipped ahead was
// skipped for its reason, and one that failed ahead, which is confirmed
// only alone, is left unjudged with why. Their exchanges come along.
func (env *Env) keepAhead(r ginkgo.Report) ginkgo.Report {
	left := env.ahead.Unreached()
	if len(left) == 0 {
		return r
	}
	specs := make(types.SpecReports, len(r.SpecReports))
	copy(specs, r.SpecReports)
	for i, sr := range specs {
		if !sr.LeafNodeType.Is(types.NodeTypeIt) || !sr.State.Is(types.SpecStateSkipped) || sr.Failure.Message != "" {
			continue
		}
		told, ok := left[check.IDFromLabels(sr.Labels())]
		if !ok {
			continue
		}
		entries := append([]types.ReportEntry(nil), sr.ReportEntries...)
		for _, e := range told.T.Entries() {
			entries = append(entries, types.ReportEntry{Name: e.Name, Value: types.WrapEntryValue(e.Value), Visibility: types.ReportEntryVisibilityNever})
		}
		sr.ReportEntries = entries
		switch told.End.Outcome {
		case trial.Passed:
			sr.State = types.SpecStatePassed
		case trial.Skipped:
			sr.Failure.Message = told.End.Message
		default:
			sr.Failure.Message = "not judged: it failed while run ahead of its place, beside other devices' checks (" +
				strings.SplitN(told.End.Message, "\n", 2)[0] + "), and the run ended before it was confirmed alone"
		}
		specs[i] = sr
	}
	r.SpecReports = specs
	return r
}
