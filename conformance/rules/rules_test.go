package rules

import (
	"regexp"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		p, id string
		want  bool
	}{
		{"*.valid", "command.light-dimmer.valid", true},
		{"*.valid", "command.light-dimmer.valid.json", false},
		{"command.*.io.on", "command.relay-module.io.on", true},
		{"command.*.io.on", "command.relay-module.io.on.lower-case", false},
		{"*.method.get", "message.method.get", true},
		{"message.valid", "message.valid", true},
		{"message.valid", "messageXvalid", false}, // dots are literal
	} {
		if got := Match(c.p, c.id); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.p, c.id, got)
		}
	}
}

// TestListsParse: both lists parse, IDs are unique, every deviation names
// a rule, and there are at least 40 deviations of every kind together.
func TestListsParse(t *testing.T) {
	if len(All()) < 40 {
		t.Errorf("only %d rules", len(All()))
	}
	seen, kinds := map[string]bool{}, map[string]int{}
	for _, d := range Deviations() {
		if seen[d.ID] {
			t.Errorf("deviation %s twice", d.ID)
		}
		seen[d.ID] = true
		kinds[d.Kind]++
	}
	if len(seen) < 40 || kinds["accepts"] == 0 || kinds["refuses"] == 0 || kinds["answer"] == 0 {
		t.Errorf("%d deviations, kinds %v", len(seen), kinds)
	}
	for _, k := range []string{"MUST", "SHOULD"} {
		n := 0
		for _, r := range All() {
			if r.Level == k {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no %s rule", k)
		}
	}
}

// Match treats * as any run of characters, as a ^...$ pattern with .* for
// each * would.
func TestMatchAsAPattern(t *testing.T) {
	ids := []string{"", "a", "command.light-dimmer.valid", "command.light-dimmer.dimming.zero", "message.envelope.sign.wrong",
		"a.b.c", "abcabc", "*", "x*y"}
	pats := []string{"", "*", "a", "a*", "*a", "*c", "a*c", "command.*", "command.*.valid", "*.envelope.*", "*.sign.*",
		"abc*abc", "a*b*c", "**", "*.*.*", "message.envelope.sign.wrong", "x*y", "c*.*-*.*"}
	for _, p := range pats {
		parts := strings.Split(p, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		for _, id := range ids {
			if got, want := Match(p, id), re.MatchString(id); got != want {
				t.Errorf("Match(%q, %q) = %v, want %v", p, id, got, want)
			}
		}
	}
}
