package checksdoc

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
)

// TestChecksDocIsCurrent fails when docs/checks.md no longer says what the
// suite declares; `make checks-doc` rewrites it.
func TestChecksDocIsCurrent(t *testing.T) {
	want := Markdown()
	got, err := os.ReadFile("../../docs/checks.md")
	if err != nil {
		t.Fatalf("reading docs/checks.md: %v (run make checks-doc)", err)
	}
	if string(got) != want {
		t.Fatalf("docs/checks.md is stale: run `make checks-doc` and commit it")
	}
}

// TestGeneratorRowsLevelsAreTheirChecks: each row of the table of rules
// by generator gives the levels of the very checks it counts, read here
// from the checks' own metadata (labels rule:… and gen:…), never the
// rule's level: a MUST rule whose generated forms are all SHOULD checks
// (API-2.1.xml-control, xml-field-twice) is listed as SHOULD.
func TestGeneratorRowsLevelsAreTheirChecks(t *testing.T) {
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([A-Z, a-z]+) \\| ((?:`[^`]+` \\(\\d+\\)(?:, )?)+) \\|$")
	gen := regexp.MustCompile("`([^`]+)` \\((\\d+)\\)")
	rows := 0
	for _, line := range strings.Split(generatorsSection(), "\n") {
		mt := row.FindStringSubmatch(line)
		if mt == nil {
			continue
		}
		rows++
		rule, shown := mt[1], mt[2]
		levels := map[check.Level]bool{}
		for _, g := range gen.FindAllStringSubmatch(mt[3], -1) {
			n := 0
			for _, m := range conformance.Checks() {
				if slices.Contains(m.Tags, catalog.GenTag+g[1]) && slices.Contains(m.Tags, "rule:"+rule) {
					levels[m.Level] = true
					n++
				}
			}
			if fmt.Sprint(n) != g[2] {
				t.Errorf("%s: %s counts %s checks, the catalog has %d", rule, g[1], g[2], n)
			}
		}
		var want []string
		for _, l := range check.Levels {
			if levels[l] {
				want = append(want, string(l))
			}
		}
		if shown != strings.Join(want, ", ") {
			t.Errorf("%s is listed as %s; its checks are %v", rule, shown, want)
		}
		if rule == "API-2.1.xml-control" && shown != "SHOULD" {
			t.Errorf("API-2.1.xml-control's xml-field-twice checks are listed as %s", shown)
		}
	}
	if rows < 5 {
		t.Fatalf("only %d rows of rules by generator read", rows)
	}
}
