package conformance

import (
	"fmt"
	"strings"

	"github.com/gwdmi/gwtools/conformance/rules"
)

// rulesSection is the rules list as Markdown for docs/checks.md: each rule
// with the cases that send something it allows and something it forbids.
func rulesSection() string {
	cases := Cases()
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
	b.WriteString("or an answer (`API-…`, MUST) and every rule of the CONTRACT (`C-…`, SHOULD). Each maps to the cases that send\n")
	b.WriteString("something it allows (must succeed) and something it forbids (must be refused), or says why a side cannot exist;\n")
	b.WriteString("a case's checks are `<case>.<format>`, `.contract`, `.sim` and `.parity`, and carry the label `rule:<id>`.\n")
	b.WriteString("A run in which no check of a rule ran is PARTIAL and names the rule.\n\n")
	b.WriteString("| Rule | Level | Source | Says | Allowed | Forbidden |\n|---|---|---|---|---|---|\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range all {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.ID, r.Level, r.Source, esc(r.Text),
			esc(side(r.Allowed, r.NoAllowed)), esc(side(r.Forbidden, r.NoForbidden)))
	}
	b.WriteString("\n")
	return b.String()
}
