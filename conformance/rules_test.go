package conformance

import (
	"testing"

	"github.com/gwdmi/gwtools/conformance/catalog"
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
