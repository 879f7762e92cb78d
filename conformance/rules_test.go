package conformance

import (
	"slices"
	"testing"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/rules"
)

// TestEveryRuleIsCoveredBothWays: every rule of rules.yaml maps to at least
// one case that sends something it allows (a case the suite expects to
// succeed) and one that sends something it forbids (a case the suite
// expects to be refused), or says why that side cannot exist; a MUST rule
// has a MUST case on each side it covers; every pattern matches a case;
// and every case belongs to some rule.
func TestEveryRuleIsCoveredBothWays(t *testing.T) {
	cases := catalog.Cases()
	valid := func(c catalog.Case) bool { return c.Want.OK || c.Want.ContractOK }
	used := map[string]bool{}
	for _, r := range rules.All() {
		if len(r.Checks) > 0 {
			continue // judged on the wire: TestWireRulesHaveTheirChecks
		}
		for _, side := range []struct {
			name     rules.Side
			patterns []string
			why      string
		}{{rules.Allowed, r.Allowed, r.NoAllowed}, {rules.Forbidden, r.Forbidden, r.NoForbidden}} {
			if len(side.patterns) == 0 {
				if side.why == "" {
					t.Errorf("rule %s has no %s case and does not say why", r.ID, side.name)
				}
				continue
			}
			n, must := 0, false
			for _, p := range side.patterns {
				matched := 0
				for _, c := range cases {
					if !rules.Match(p, c.ID) {
						continue
					}
					matched++
					used[c.ID] = true
					if valid(c) != (side.name == rules.Allowed) {
						t.Errorf("rule %s: case %s is on the %s side but the suite expects it to %s", r.ID, c.ID, side.name,
							map[bool]string{true: "succeed", false: "be refused"}[valid(c)])
					}
					n++
					if c.Want.OK || c.Want.Must {
						must = true
					}
				}
				if matched == 0 {
					t.Errorf("rule %s: %s pattern %q matches no case", r.ID, side.name, p)
				}
			}
			if n == 0 {
				t.Errorf("rule %s has no %s case", r.ID, side.name)
			}
			if r.Level == "MUST" && !must {
				t.Errorf("MUST rule %s has no MUST case on its %s side", r.ID, side.name)
			}
		}
	}
	for _, c := range cases {
		if !used[c.ID] {
			t.Errorf("case %s belongs to no rule of rules.yaml", c.ID)
		}
	}
}

// TestWireRulesHaveTheirChecks: a rule judged on the wire (HTTP's own
// rules) names checks the suite declares, each at the rule's level and
// labelled with it; and every check of the family belongs to a rule.
func TestWireRulesHaveTheirChecks(t *testing.T) {
	checks := Checks()
	n := 0
	for _, r := range rules.All() {
		for _, p := range r.Checks {
			matched := 0
			for _, m := range checks {
				if !rules.Match(p, m.ID) {
					continue
				}
				matched++
				if string(m.Level) != r.Level {
					t.Errorf("rule %s is %s, its check %s %s", r.ID, r.Level, m.ID, m.Level)
				}
				if !slices.Contains(m.Tags, report.RuleTag+r.ID) {
					t.Errorf("check %s lacks the label %s%s", m.ID, report.RuleTag, r.ID)
				}
			}
			if matched == 0 {
				t.Errorf("rule %s: check pattern %q matches no check", r.ID, p)
			}
			n += matched
		}
	}
	for _, m := range checks {
		if slices.Contains(m.Tags, "http") && len(rules.ForCheck(m.ID)) == 0 {
			t.Errorf("check %s of HTTP's own rules belongs to no rule", m.ID)
		}
	}
	if n < 15 {
		t.Errorf("only %d checks of HTTP's own rules", n)
	}
}
