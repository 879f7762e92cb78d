package report

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/rules"
)

// ExpectedFailure is the outcome of a failed check that the run's baseline
// lists: shown with its reason, not counted against the exit code.
const ExpectedFailure = "expected_failure"

// Baseline lists known failures, each with an end date, so that a team can
// live with them without hiding new ones. It only ever shrinks: an entry
// whose checks pass, an expired entry, or one naming no check fails the run.
type Baseline struct {
	Entries []BaselineEntry `yaml:"entries" json:"entries"`
}

// BaselineEntry is one known failure.
type BaselineEntry struct {
	// Check is a check ID or a glob of IDs (command.thermostat.*).
	Check  string `yaml:"check" json:"check"`
	Reason string `yaml:"reason" json:"reason"`
	Owner  string `yaml:"owner" json:"owner"`
	Link   string `yaml:"link,omitempty" json:"link,omitempty"`
	// Expires is a date, YYYY-MM-DD; from the day after it the entry fails
	// the run.
	Expires string `yaml:"expires" json:"expires"`
}

// MaxBaselineDays is how far ahead an entry's expiry may be: a known
// failure is looked at again within a quarter.
const MaxBaselineDays = 90

// ParseBaseline reads a baseline file and checks every entry's fields as
// of now (see ParseBaselineOn).
func ParseBaseline(b []byte) (*Baseline, error) { return ParseBaselineOn(b, time.Now()) }

// ParseBaselineOn reads a baseline file and checks every entry's fields:
// a check, a reason and an owner that are not TODO (what gwconform
// baseline writes for a person to fill in), and an expiry date at most
// MaxBaselineDays after today.
func ParseBaselineOn(b []byte, today time.Time) (*Baseline, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var bl Baseline
	if err := dec.Decode(&bl); err != nil {
		return nil, fmt.Errorf("baseline: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	for i, e := range bl.Entries {
		where := fmt.Sprintf("baseline: entries[%d]", i)
		if e.Check == "" {
			return nil, fmt.Errorf("%s.check: a check ID or glob is needed", where)
		}
		if _, err := path.Match(e.Check, ""); err != nil {
			return nil, fmt.Errorf("%s.check: %q is not a valid glob", where, e.Check)
		}
		if strings.TrimSpace(e.Reason) == "" {
			return nil, fmt.Errorf("%s.reason: say why %s fails", where, e.Check)
		}
		if strings.TrimSpace(e.Owner) == "" {
			return nil, fmt.Errorf("%s.owner: name who fixes %s", where, e.Check)
		}
		if isTODO(e.Reason) {
			return nil, fmt.Errorf("%s.reason: still TODO: say why %s fails", where, e.Check)
		}
		if isTODO(e.Owner) {
			return nil, fmt.Errorf("%s.owner: still TODO: name who fixes %s", where, e.Check)
		}
		exp, err := time.Parse(time.DateOnly, e.Expires)
		if err != nil {
			return nil, fmt.Errorf("%s.expires: %q is not a date such as 2027-01-31", where, e.Expires)
		}
		y, m, d := today.Date()
		limit := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).AddDate(0, 0, MaxBaselineDays)
		if exp.After(limit) {
			return nil, fmt.Errorf("%s.expires: %s is more than %d days away (at most %s): a known failure is looked at again within a quarter", where, e.Expires, MaxBaselineDays, limit.Format(time.DateOnly))
		}
	}
	return &bl, nil
}

// isTODO says a field still holds gwconform baseline's placeholder.
func isTODO(s string) bool { return strings.Contains(strings.ToUpper(s), "TODO") }

// Excuses says whether an entry of the baseline covers the check with that
// ID: its failure, unless the check is INFO, is a known failure.
func (b *Baseline) Excuses(id string) bool {
	if b == nil {
		return false
	}
	for _, e := range b.Entries {
		if e.matches(id) {
			return true
		}
	}
	return false
}

// Matches says whether the entry covers the check with that ID.
func (e BaselineEntry) Matches(id string) bool { return e.matches(id) }

func (e BaselineEntry) matches(id string) bool {
	ok, _ := path.Match(e.Check, id)
	return ok || e.Check == id
}

// KnownRule is why a rule's failures are known, "" when they are not: a
// rule is known when an entry, unexpired on today, names the rule's ID
// (or a glob matching it) or a check whose case rules.yaml maps to the
// rule. gwconform explore and the run's model-based phase read a
// baseline so: their findings are rules broken, not checks.
func (b *Baseline) KnownRule(rule string, today time.Time) string {
	if b == nil || rule == "" {
		return ""
	}
	day := today.Format(time.DateOnly)
	for _, e := range b.Entries {
		if e.Expires < day {
			continue
		}
		hit := rules.Match(e.Check, rule)
		if !hit {
			id := strings.TrimSuffix(strings.TrimSuffix(e.Check, ".json"), ".xml")
			for _, r := range rules.For(id) {
				hit = hit || r.ID == rule
			}
		}
		if hit {
			return fmt.Sprintf("%s (%s, until %s)", e.Reason, e.Owner, e.Expires)
		}
	}
	return ""
}

// applyBaseline turns the failures a baseline lists into expected
// failures and records what is wrong with the baseline itself.
func applyBaseline(d Document, bl *Baseline, today time.Time) Document {
	if bl == nil {
		return d
	}
	day := today.Format(time.DateOnly)
	for _, e := range bl.Entries {
		known, failing := 0, 0
		for i, r := range d.Results {
			if r.ID == "" || !e.matches(r.ID) {
				continue
			}
			known++
			if r.Level == string(check.Info) || (r.Outcome != Failed && r.Outcome != ExpectedFailure) {
				continue
			}
			failing++
			d.Results[i].Outcome = ExpectedFailure
			note := "expected failure (baseline: " + e.Reason + "; owner " + e.Owner
			if e.Link != "" {
				note += ", " + e.Link
			}
			d.Results[i].Reason = note + ", until " + e.Expires + ")"
		}
		switch {
		case known == 0:
			d.BaselineProblems = append(d.BaselineProblems, fmt.Sprintf("baseline entry %q names no check of this catalog: remove or correct it", e.Check))
		case e.Expires < day:
			d.BaselineProblems = append(d.BaselineProblems, fmt.Sprintf("baseline entry %q expired on %s (owner %s): fix the failure or renew the entry", e.Check, e.Expires, e.Owner))
		case failing == 0:
			d.BaselineProblems = append(d.BaselineProblems, fmt.Sprintf("baseline entry %q: its checks pass now: remove it from the baseline", e.Check))
		}
	}
	d.Summary = summarize(d.Results)
	setVerdict(&d)
	return d
}

// StartingBaseline is a baseline listing every failed MUST and SHOULD
// check of a report, each to be given its reason and owner, expiring in
// 90 days: what gwconform baseline writes.
func StartingBaseline(d Document, today time.Time) ([]byte, error) {
	var ids []string
	for _, r := range d.Results {
		if r.Level != string(check.Info) && r.ID != "" && (r.Outcome == Failed || r.Outcome == Interrupted || r.Outcome == ExpectedFailure) {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("the report has no failed check: no baseline is needed")
	}
	sort.Strings(ids)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Known failures of %s (seed %d), from gwconform baseline.\n", d.Target, d.Seed)
	b.WriteString("# Every entry still says TODO: gwconform run refuses this file until each one has\n")
	b.WriteString("# its reason and owner (and a link). An entry fails the run once it expires (at\n")
	b.WriteString("# most 90 days ahead), once its checks pass, or if it names no check: a baseline\n")
	b.WriteString("# only shrinks. A certified run (--mode certified) excuses no MUST check.\n")
	b.WriteString("entries:\n")
	expires := today.AddDate(0, 0, 90).Format(time.DateOnly)
	for _, id := range ids {
		r, _ := d.Result(id)
		why := strings.TrimSpace(strings.SplitN(r.Failure, "\n", 2)[0])
		if len(why) > 120 {
			why = why[:120] + "…"
		}
		fmt.Fprintf(&b, "  - check: %s\n    reason: %s\n    owner: TODO\n    link: \"\"\n    expires: %s\n", yamlString(id), yamlString("TODO: "+why), expires)
	}
	return b.Bytes(), nil
}

func yamlString(s string) string {
	out, _ := yaml.Marshal(s)
	return strings.TrimSpace(string(out))
}
