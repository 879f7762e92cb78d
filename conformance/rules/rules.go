// Package rules is the machine-readable list of the rules the conformance
// suite checks (rules.yaml, embedded): every sentence of the published
// interface that constrains a request or an answer, and every rule of our
// CONTRACT, each with a stable ID and the cases that send something it
// allows and something it forbids.
package rules

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

//go:embed rules.yaml
var source []byte

// Rule is one rule.
type Rule struct {
	ID string `yaml:"id"`
	// Source is where the rule is written: "gateway-api.md 2.1", "CONTRACT 2".
	Source string `yaml:"source"`
	// Level is MUST for the published interface, SHOULD for the CONTRACT.
	Level string `yaml:"level"`
	Text  string `yaml:"text"`
	// Allowed and Forbidden are case ID patterns (* matches anything):
	// cases that send something the rule allows (must succeed) or forbids
	// (must be refused).
	Allowed   []string `yaml:"allowed"`
	Forbidden []string `yaml:"forbidden"`
	// NoAllowed and NoForbidden say why one side cannot exist.
	NoAllowed   string `yaml:"no_allowed"`
	NoForbidden string `yaml:"no_forbidden"`
	// Generators name the oracle's generators (oracle.Generators) whose
	// forms the rule's cases send: its forbidden side generated from the
	// grammar its text rests on, not picked by hand.
	Generators []string `yaml:"generators"`
	// Checks are check ID patterns (* matches anything) of the checks that
	// judge the rule on the wire rather than by a case: HTTP's own rules
	// (RFC 9110, RFC 9112), whose checks write their requests byte by
	// byte. A rule with checks has no allowed or forbidden cases.
	Checks []string `yaml:"checks"`
}

var (
	once sync.Once
	all  []Rule
	err  error
)

// All returns the rules in the order of rules.yaml. It panics if the
// embedded list does not parse: a broken list never ships (its test fails).
func All() []Rule {
	once.Do(func() {
		err = yaml.Unmarshal(source, &all)
		if err == nil {
			err = check(all)
		}
	})
	if err != nil {
		panic("rules: " + err.Error())
	}
	return all
}

func check(rs []Rule) error {
	seen := map[string]bool{}
	for _, r := range rs {
		switch {
		case r.ID == "" || r.Text == "" || r.Source == "":
			return fmt.Errorf("rule %+v lacks id, text or source", r)
		case seen[r.ID]:
			return fmt.Errorf("rule %s appears twice", r.ID)
		case r.Level != "MUST" && r.Level != "SHOULD":
			return fmt.Errorf("rule %s: level %q", r.ID, r.Level)
		case len(r.Checks) > 0:
			if len(r.Allowed)+len(r.Forbidden) > 0 {
				return fmt.Errorf("rule %s has checks and cases: a rule is judged by one or the other", r.ID)
			}
		case len(r.Allowed) == 0 && r.NoAllowed == "", len(r.Forbidden) == 0 && r.NoForbidden == "":
			return fmt.Errorf("rule %s maps no case to one side and does not say why", r.ID)
		}
		seen[r.ID] = true
	}
	return nil
}

// Match reports whether a case ID matches a pattern, where * matches any
// run of characters (dots included). It is called for every rule and case
// when the catalog is built, so it matches directly, without a regexp.
func Match(pattern, id string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == id
	}
	if !strings.HasPrefix(id, pattern[:star]) {
		return false
	}
	id, pattern = id[star:], pattern[star+1:]
	for {
		star = strings.IndexByte(pattern, '*')
		if star < 0 {
			return strings.HasSuffix(id, pattern)
		}
		i := strings.Index(id, pattern[:star])
		if i < 0 {
			return false
		}
		id, pattern = id[i+star:], pattern[star+1:]
	}
}

// Side is which side of a rule a case is on.
type Side string

const (
	Allowed   Side = "allowed"
	Forbidden Side = "forbidden"
)

var forCache sync.Map // case ID -> []Rule

// For lists the rules a case ID is mapped to, on either side.
func For(caseID string) []Rule {
	if v, ok := forCache.Load(caseID); ok {
		return v.([]Rule)
	}
	out := forUncached(caseID)
	forCache.Store(caseID, out)
	return out
}

func forUncached(caseID string) []Rule {
	var out []Rule
	for _, r := range All() {
		if matchAny(r.Allowed, caseID) || matchAny(r.Forbidden, caseID) {
			out = append(out, r)
		}
	}
	return out
}

// ForCheck lists the rules whose checks (Rule.Checks) match a check ID.
func ForCheck(checkID string) []Rule {
	var out []Rule
	for _, r := range All() {
		if matchAny(r.Checks, checkID) {
			out = append(out, r)
		}
	}
	return out
}

// Matches reports whether any pattern matches id.
func matchAny(ps []string, id string) bool {
	for _, p := range ps {
		if Match(p, id) {
			return true
		}
	}
	return false
}

// On reports whether case id is on that side of rule r.
func (r Rule) On(side Side, id string) bool {
	if side == Allowed {
		return matchAny(r.Allowed, id)
	}
	return matchAny(r.Forbidden, id)
}

//go:embed deviations.yaml
var deviationSource []byte

// Deviation is one single-rule deviation of the simulator that the
// mutation-score test (cmd/gwconform) runs the suite against. Only its
// description is here; its code exists only in that test.
type Deviation struct {
	ID   string `yaml:"id"`
	Rule string `yaml:"rule"`
	// Kind: accepts, refuses, answer or state.
	Kind string `yaml:"kind"`
	Text string `yaml:"text"`
}

// Deviations returns the deviations in the order of deviations.yaml; it
// panics if the list does not parse or names a rule that does not exist.
func Deviations() []Deviation {
	var ds []Deviation
	if err := yaml.Unmarshal(deviationSource, &ds); err != nil {
		panic("rules: deviations.yaml: " + err.Error())
	}
	for _, d := range ds {
		if _, ok := Lookup(d.Rule); !ok {
			panic("rules: deviation " + d.ID + " names no rule " + d.Rule)
		}
	}
	return ds
}

// Lookup finds a rule by ID.
func Lookup(id string) (Rule, bool) {
	for _, r := range All() {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}
