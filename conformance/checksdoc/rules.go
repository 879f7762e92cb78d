package checksdoc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/rules"
)

// rulesSection is the rules list as Markdown for docs/checks.md: each rule
// with the cases that send something it allows and something it forbids.
func rulesSection() string {
	cases := catalog.Cases()
	count := func(ps []string) int {
		n := 0
		for _, c := range cases {
			for _, p := range ps {
				if rules.Match(p, c.ID) {
					n++
					break
				}
			}
		}
		return n
	}
	side := func(ps []string, why string) string {
		if len(ps) == 0 {
			return "none: " + why
		}
		q := make([]string, len(ps))
		for i, p := range ps {
			q[i] = "`" + p + "`"
		}
		return fmt.Sprintf("%d cases: %s", count(ps), strings.Join(q, ", "))
	}
	var b strings.Builder
	all := rules.All()
	fmt.Fprintf(&b, "## Rules\n\n%d rules (conformance/rules/rules.yaml): every sentence of the published interface that constrains a request\n", len(all))
	b.WriteString("or an answer (`API-…`, MUST), every rule of the CONTRACT (`C-…`, SHOULD), and HTTP's own rules (`RFC…`, the RFC's\n")
	b.WriteString("keyword: the published interface is an HTTP interface), which checks judge on the wire. Each other maps to the cases that send\n")
	b.WriteString("something it allows (must succeed) and something it forbids (must be refused), or says why a side cannot exist;\n")
	b.WriteString("a case's checks are `<case>.<format>`, `.contract`, `.sim` and `.parity`, and carry the label `rule:<id>`.\n")
	b.WriteString("A run in which no check of a rule ran is PARTIAL and names the rule.\n\n")
	b.WriteString("| Rule | Level | Source | Says | Allowed | Forbidden |\n|---|---|---|---|---|---|\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	checks := conformance.Checks()
	for _, r := range all {
		allowed, forbidden := side(r.Allowed, r.NoAllowed), side(r.Forbidden, r.NoForbidden)
		if len(r.Checks) > 0 {
			// HTTP's own rules: judged on the wire by checks, not cases.
			n := 0
			for _, m := range checks {
				for _, p := range r.Checks {
					if rules.Match(p, m.ID) {
						n++
						break
					}
				}
			}
			q := make([]string, len(r.Checks))
			for i, p := range r.Checks {
				q[i] = "`" + p + "`"
			}
			allowed = fmt.Sprintf("judged on the wire by %d checks: %s (each sends valid requests and judges the framing of their answers)", n, strings.Join(q, ", "))
			forbidden = "none: the checks write HTTP as the RFC allows it and judge what the service writes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.ID, r.Level, r.Source, esc(r.Text), esc(allowed), esc(forbidden))
	}
	b.WriteString("\n")
	b.WriteString(generatorsSection())
	b.WriteString(boundariesSection(cases))
	return b.String()
}

// boundariesSection lists, rule by rule, every boundary the suite judges:
// each case that sends a value at a boundary, one smallest step inside it
// or one step outside it (label boundary), with what the oracle expects.
func boundariesSection(cases []catalog.Case) string {
	var b strings.Builder
	b.WriteString("### Boundaries\n\n")
	b.WriteString("Every boundary of both texts is judged one smallest step inside it and one step outside it, on each side\n")
	b.WriteString("(gatewayapi/oracle: integers by 1, the thermostat points by 0.001 °C, lengths by one character in ASCII, in two-,\n")
	b.WriteString("three- and four-byte UTF-8 and with combining characters, the timestamp window by one second each way). Each row is a\n")
	b.WriteString("case; its checks are `<case>.json`, `.xml`, `.contract`, `.sim` and `.parity` (label `boundary`).\n\n")
	b.WriteString("| Rule | Case | Sends | Expected |\n|---|---|---|---|\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range rules.All() {
		for _, c := range cases {
			if !slices.Contains(c.Tags, "boundary") || !(r.On(rules.Allowed, c.ID) || r.On(rules.Forbidden, c.ID)) {
				continue
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", r.ID, c.ID, esc(c.Title), c.Expected())
		}
	}
	b.WriteString("\n")
	return b.String()
}
