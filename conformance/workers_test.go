package conformance

import (
	"maps"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestSchedulingAndReportIgnoreWording: which worker runs a check, and
// which check a spec of the report is, follow from the check's declared
// metadata (its ID and traits), never from its wording: rewording every
// title and assertion moves no check to another worker, and a spec whose
// display text says something else entirely is still reported as its
// check.
func TestSchedulingAndReportIgnoreWording(t *testing.T) {
	all := Checks()
	reworded := make([]check.Meta, len(all))
	for i, m := range all {
		m.Title = "reworded " + m.ID
		// Words the old text search looked for, put where they do not
		// belong, and taken out where they were.
		m.Assertion = "It MUST be answered with status success or " + device.CodeDeviceNotFound
		if i%2 == 0 {
			m.Assertion = "Plain words."
		}
		reworded[i] = m
	}
	for _, workers := range []int{2, 3, 8} {
		want, got := schedule.Workers(all, workers), schedule.Workers(reworded, workers)
		if !maps.Equal(want, got) {
			n := 0
			for id, w := range want {
				if got[id] != w {
					n++
				}
			}
			t.Errorf("%d workers: rewording the checks moved %d of them to another worker", workers, n)
		}
	}

	// The report reads the ID from the spec's labels.
	m := all[0]
	sr := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "[not.an.id] something else entirely",
		LeafNodeLabels: m.Labels(), State: types.SpecStatePassed}
	d := report.Build(types.Report{SpecReports: types.SpecReports{sr}}, "x", Catalog())
	if len(d.Results) != 1 || d.Results[0].ID != m.ID || d.Results[0].Assertion != m.Assertion {
		t.Errorf("a spec labelled %s, with another display text, is reported as %+v", m.ID, d.Results)
	}
}

// TestTraitsAreDeclared: every check shares what it must share, by its
// declaration: every whole-fleet case and every check that watches other
// gateways or devices runs on worker 0; the message checks, which look
// for their own messages among the others' (observer.Log.GainedMessage), are
// spread over the workers; a parity check weighs twice its case's
// verdict check.
func TestTraitsAreDeclared(t *testing.T) {
	a := schedule.Workers(Checks(), 4)
	byID := map[string]check.Meta{}
	for _, m := range Checks() {
		byID[m.ID] = m
	}
	onWorker := map[int]int{}
	for _, m := range Checks() {
		if m.Operation == device.SendMessage.Name() && !m.Traits.Shared {
			onWorker[a[m.ID]]++
		}
		if (strings.HasSuffix(m.ID, ".isolation.json") || strings.HasPrefix(m.ID, "effect.message.other-gateway") || strings.HasPrefix(m.ID, "fleet.")) && (!m.Traits.Shared || a[m.ID] != 0) {
			t.Errorf("%s watches other gateways or devices but is not Shared (worker %d)", m.ID, a[m.ID])
		}
		if m.Traits.Cost <= 0 {
			t.Errorf("%s declares no cost", m.ID)
		}
	}
	if len(onWorker) != 4 {
		t.Errorf("the message checks run on %d of 4 workers: %v", len(onWorker), onWorker)
	}
	for _, c := range catalog.Cases() {
		if len(c.InFormats()) != 2 {
			continue
		}
		p, ok := byID[c.ID+".parity"]
		v, okv := byID[c.ID+".json"]
		if ok && okv && p.Traits.Cost != 2*v.Traits.Cost {
			t.Errorf("%s costs %d, its verdict check %d", p.ID, p.Traits.Cost, v.Traits.Cost)
		}
		if c.WholeFleet && !p.Traits.Shared {
			t.Errorf("%s is a whole-fleet case, not Shared", p.ID)
		}
	}
}
