package checksdoc

import (
	"fmt"
	"strings"

	"github.com/gwdmi/gwtools/conformance/rules"
)

// mutationSection is the harness's mutation score for docs/checks.md.
func mutationSection() string {
	ds := rules.Deviations()
	kinds := map[string]int{}
	for _, d := range ds {
		kinds[d.Kind]++
	}
	var b strings.Builder
	b.WriteString("## Mutation score\n\n")
	fmt.Fprintf(&b, "Score: **%d of %d** single-rule deviations of the simulator detected at their rule's level (%d accept something\n",
		len(ds), len(ds), kinds["accepts"])
	fmt.Fprintf(&b, "forbidden, %d refuse something allowed, %d deviate in the answer's status, format or body shape, %d in the state\n",
		kinds["refuses"], kinds["answer"], kinds["state"])
	b.WriteString("the admin API shows). `TestMutationScore` (cmd/gwconform, part of `make test-heavy`, which CI runs; `-run 'TestMutationScore/<id>'`\n")
	b.WriteString("runs one deviation, `/faithful` the faithful simulator) starts\n")
	b.WriteString("its own test binary again as `gwconform run` whose embedded simulator is wrapped in one deviation, runs the full\n")
	b.WriteString("suite against it, and fails unless a MUST rule's deviation fails a MUST check of that\n")
	b.WriteString("rule (the run fails at `--fail-on must`) and a CONTRACT rule's fails a check of that rule (`--fail-on should`),\n")
	b.WriteString("while the faithful simulator passes at `--fail-on should`. The deviations exist only in that test (descriptions in\n")
	b.WriteString("conformance/rules/deviations.yaml); none ships in gwsim or gwconform.\n\n")
	b.WriteString("| Deviation | Kind | Rule | Level | What the target does |\n|---|---|---|---|---|\n")
	for _, d := range ds {
		r, _ := rules.Lookup(d.Rule)
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n", d.ID, d.Kind, d.Rule, r.Level, strings.ReplaceAll(d.Text, "|", `\|`))
	}
	b.WriteString("\n")
	return b.String()
}
