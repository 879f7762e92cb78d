package conformance

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// TestGeneratedCasesBelongToTheirRules: every generator rules.yaml names
// is one of the oracle's, every generator sends cases, and every case a
// generator made belongs to a rule that names it; a refusal quotes its
// sentence, and a MUST refusal quotes the published text.
func TestGeneratedCasesBelongToTheirRules(t *testing.T) {
	gens := map[string]bool{}
	for _, g := range oracle.Generators() {
		gens[g.Name] = true
	}
	named := map[string]bool{}
	for _, r := range rules.All() {
		for _, g := range r.Generators {
			if !gens[g] {
				t.Errorf("rule %s names no generator %s", r.ID, g)
			}
			named[g] = true
		}
	}
	sent := map[string]int{}
	for _, c := range catalog.Cases() {
		for _, tag := range c.Tags {
			g, ok := strings.CutPrefix(tag, catalog.GenTag)
			if !ok {
				continue
			}
			sent[g]++
			owned := false
			for _, r := range rules.For(c.ID) {
				for _, rg := range r.Generators {
					owned = owned || rg == g
				}
			}
			if !owned {
				t.Errorf("case %s of generator %s belongs to no rule that names it", c.ID, g)
			}
			if !c.Want.OK && !c.Want.ContractOK {
				if c.Want.Quote == "" {
					t.Errorf("case %s: a generated refusal without its sentence", c.ID)
				} else if c.Want.Must && oracle.Texts(c.Want.Quote) != "published" {
					t.Errorf("case %s: MUST on a CONTRACT sentence", c.ID)
				}
			}
		}
	}
	for g := range gens {
		if !named[g] {
			t.Errorf("generator %s is named by no rule", g)
		}
		if sent[g] == 0 {
			t.Errorf("generator %s sends no case", g)
		}
	}
}
