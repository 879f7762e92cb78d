package checksdoc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// generatorsSection lists the generators of the rules whose forbidden
// side is generated from a grammar: each generator with the grammar it
// walks, the size of its family, how many forms a run sends, and the
// cases and checks that send them; then each rule with its generators.
func generatorsSection() string {
	cases := map[string]int{}
	for _, c := range catalog.Cases() {
		for _, tag := range c.Tags {
			if g, ok := strings.CutPrefix(tag, catalog.GenTag); ok {
				cases[g]++
			}
		}
	}
	checks := map[string]int{}
	byRule := map[string]int{}
	// ruleLevels are the levels of the checks each rule's row counts: the
	// row's level is theirs, not the rule's (a rule of the published
	// interface may have only SHOULD checks among its generated forms).
	ruleLevels := map[string]map[check.Level]bool{}
	for _, m := range conformance.Checks() {
		gen := ""
		for _, tag := range m.Tags {
			if g, ok := strings.CutPrefix(tag, catalog.GenTag); ok {
				gen = g
				checks[g]++
			}
		}
		if gen == "" {
			continue
		}
		for _, tag := range m.Tags {
			if r, ok := strings.CutPrefix(tag, "rule:"); ok {
				byRule[strings.ToLower(r)+" "+gen]++
				key := strings.ToLower(r) + " " + gen
				if ruleLevels[key] == nil {
					ruleLevels[key] = map[check.Level]bool{}
				}
				ruleLevels[key][m.Level] = true
			}
		}
	}
	var b strings.Builder
	b.WriteString("### Generated forms\n\n")
	b.WriteString("The forbidden side of every rule whose text rests on a grammar is generated from that grammar's near misses\n")
	b.WriteString("(gatewayapi/oracle, nearmiss.go), not picked by hand, in the manner of JSONTestSuite's y_/n_/i_ files: each\n")
	b.WriteString("form is allowed (must succeed), refused with the sentence that forbids it, or left to the implementation\n")
	b.WriteString("(Open: probed, INFO, never failed). A MUST that rests on an inference from a published sentence (a text that\n")
	b.WriteString("breaks RFC 8259 is no JSON; a sign anyone computes without the secret is no sign) says its inference once, in\n")
	b.WriteString("the check's assertion beside its quote (\"read with it: …\"). Families too large to send whole are sampled with the run's seed: one change per position, the\n")
	b.WriteString("digit drawn from the seed. Cases are tagged `gen:<generator>`.\n\n")
	b.WriteString("| Generator | Grammar | Forms in the family | Decided forms a run sends | Cases | Checks |\n|---|---|---|---|---|---|\n")
	for _, g := range oracle.Generators() {
		fmt.Fprintf(&b, "| `%s` | %s | %d | %d | %d | %d |\n", g.Name, strings.ReplaceAll(g.Grammar, "|", `\|`), g.Size, g.Sent, cases[g.Name], checks[g.Name])
	}
	b.WriteString("\n`json-number` is sent for each of the four numeric fields (dimming, code, cooling point, heating point);\n")
	b.WriteString("`http-method` and `http-path` on each of the three operations; `id-position` changes every position of\n")
	b.WriteString("myservice_id, mac and sn but the first and the last, which `near-miss.*.first-character-changed` and\n")
	b.WriteString("`last-character-changed` send.\n\n")
	b.WriteString("| Rule | Levels of these checks | Generators (checks of their cases) |\n|---|---|---|\n")
	for _, r := range rules.All() {
		if len(r.Generators) == 0 {
			continue
		}
		var parts []string
		levels := map[check.Level]bool{}
		for _, g := range r.Generators {
			parts = append(parts, fmt.Sprintf("`%s` (%d)", g, byRule[strings.ToLower(r.ID)+" "+g]))
			for l := range ruleLevels[strings.ToLower(r.ID)+" "+g] {
				levels[l] = true
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.ID, levelsOf(levels), strings.Join(parts, ", "))
	}
	b.WriteString(familiesTable())
	held := catalog.HeldBackForms()
	slices.Sort(held)
	if len(held) > 0 {
		b.WriteString("\nNot well-formed XML that the reference simulator still accepts (its reader, Go's encoding/xml, does not check\n")
		b.WriteString("them), probed in `probe.open-forms.message.xml-document` until it refuses them: `" + strings.Join(held, "`, `") + "`.\n")
	}
	b.WriteString("\n")
	return b.String()
}

// familiesTable lists the generated checks by family: each run of cases
// whose IDs differ only in their last part (the form), with how many
// cases and checks of each level it has. Each form, its verdict and its
// sentence are in docs/oracle.md.
func familiesTable() string {
	type family struct {
		gen          string
		cases        int
		must, should int
		formats      map[string]bool
	}
	fams := map[string]*family{}
	var order []string
	caseOf := map[string]string{}
	for _, c := range catalog.Cases() {
		for _, tag := range c.Tags {
			g, ok := strings.CutPrefix(tag, catalog.GenTag)
			if !ok {
				continue
			}
			i := strings.LastIndex(c.ID, ".")
			p := c.ID[:i] + ".*"
			if strings.HasPrefix(c.ID[i+1:], "position-") {
				p = c.ID[:i] + ".position-*"
			}
			f := fams[p]
			if f == nil {
				f = &family{gen: g, formats: map[string]bool{}}
				fams[p] = f
				order = append(order, p)
			}
			f.cases++
			caseOf[c.ID] = p
		}
	}
	for _, m := range conformance.Checks() {
		if !generatedCheck(m) {
			continue
		}
		id := m.ID
		p := ""
		for id != "" && p == "" {
			p = caseOf[id]
			if fams[id+".*"] != nil {
				p = id + ".*" // a check of a family that is no case (HEAD)
			}
			if i := strings.LastIndex(id, "."); i >= 0 {
				id = id[:i]
			} else {
				id = ""
			}
		}
		f := fams[p]
		if f == nil {
			continue
		}
		if m.Level == "MUST" {
			f.must++
		} else {
			f.should++
		}
		if m.Format != "" {
			f.formats[m.Format] = true
		}
	}
	var b strings.Builder
	b.WriteString("\nThe generated checks, by family (a case's checks are `<case>.<format>`, `.contract` and, in both formats,\n")
	b.WriteString("`.parity`; each form with its verdict and sentence is in [oracle.md](oracle.md)):\n\n")
	b.WriteString("| Cases | Generator | Cases sent | MUST checks | SHOULD checks | Formats |\n|---|---|---|---|---|---|\n")
	for _, p := range order {
		f := fams[p]
		var fs []string
		for _, x := range []string{"json", "xml"} {
			if f.formats[x] {
				fs = append(fs, x)
			}
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %d | %d | %d | %s |\n", p, f.gen, f.cases, f.must, f.should, strings.Join(fs, ", "))
	}
	return b.String()
}

// levelsOf names a set of levels in their order ("MUST, SHOULD"), or
// "none" for no check.
func levelsOf(set map[check.Level]bool) string {
	var out []string
	for _, l := range check.Levels {
		if set[l] {
			out = append(out, string(l))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
