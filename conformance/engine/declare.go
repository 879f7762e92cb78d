package engine

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/batch"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// declareChecks declares every check of the suite (Checks.Declare), each
// reading the run's Env when it runs. The container is Ordered: Ginkgo
// runs the checks in the order they are declared (else it sorts the specs
// of a container by where they are declared, then by their text, and
// every check is declared by check.It), and ContinueOnFailure: a failed
// check does not skip the rest. The checks run ahead of their place
// (ahead.go) go in the same order.
func declareChecks(declare func()) {
	ginkgo.Describe(suiteText, ginkgo.Ordered, ginkgo.ContinueOnFailure, declare)
}

// Listing is an Env that lists the checks declared on it in list instead
// of declaring specs: the catalog, built without Ginkgo.
func Listing(list *[]check.Meta) *Env { return &Env{collect: list} }

// suiteText is the container of every check: part of each spec's text.
const suiteText = "Gateway Device Management Interface"

// ItPlanned declares a check whose requests may be sent together with
// the other checks of its device when the target is far (package batch).
func (env *Env) ItPlanned(m check.Meta, p batch.Plan, body func(context.Context)) bool {
	env.Plan(m, p)
	return env.ItAbout(m, env.CaseKey(p.Case, p.Formats[0]), func(ctx context.Context) {
		env.Batch().Run(ctx, m.ID, body)
	})
}

// Plan hands a check of a case to the run's batches (package batch),
// when it will run in this process and its requests may go with others.
func (env *Env) Plan(m check.Meta, p batch.Plan) {
	if !env.mayRunAhead() || p.Case.WholeFleet {
		return
	}
	if strings.Contains(p.Case.ID, ".timestamp.") && slices.Contains(p.Case.Tags, "boundary") {
		// A timestamp a second from the window's edge means what it
		// tests only when sent in the second it names: never held back
		// behind other requests.
		return
	}
	if p.Case.Op == device.SendMessage && p.Kind == batch.ValidState {
		// A valid message's state check wants its message last in the
		// gateway's log, which every message sent beside it would change:
		// it runs alone. A refusal's looks only for its own message
		// (observer.Log.UnchangedBy), whatever else the log gains.
		return
	}
	if env.Workers > 1 && env.workerOf(m.ID, env.Workers) != env.Worker {
		return
	}
	if !env.filter.willRun(check.Finish(m)) {
		return
	}
	p.ID = m.ID
	env.Batch().Plan(p)
}

// filter is the run's filter as Ginkgo applies it (its label filter,
// focus and skip on the spec's full text), compiled once: it is asked of
// every one of the suite's checks.
type filter struct {
	labels      func([]string) bool
	focus, skip *regexp.Regexp
	// broken: a filter that does not compile runs nothing (Ginkgo refuses
	// it before any check).
	broken bool
}

func newFilter(cfg types.SuiteConfig) filter {
	var f filter
	var err error
	if cfg.LabelFilter != "" {
		if f.labels, err = types.ParseLabelFilter(cfg.LabelFilter); err != nil {
			f.broken = true
		}
	}
	if len(cfg.FocusStrings) > 0 {
		if f.focus, err = regexp.Compile(strings.Join(cfg.FocusStrings, "|")); err != nil {
			f.broken = true
		}
	}
	if len(cfg.SkipStrings) > 0 {
		if f.skip, err = regexp.Compile(strings.Join(cfg.SkipStrings, "|")); err != nil {
			f.broken = true
		}
	}
	return f
}

// willRun says whether Ginkgo will run a check under the filter.
func (f filter) willRun(m check.Meta) bool {
	if f.broken || f.labels != nil && !f.labels(m.Labels()) {
		return false
	}
	if f.focus == nil && f.skip == nil {
		return true
	}
	text := "gwconform " + suiteText + " " + m.Text()
	return (f.focus == nil || f.focus.MatchString(text)) && (f.skip == nil || !f.skip.MatchString(text))
}
