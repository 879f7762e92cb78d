package bundle

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"go.yaml.in/yaml/v3"
)

// Expect is what the verifying gwconform carries: its catalog of checks.
type Expect struct {
	CatalogVersion string
	CatalogHash    string
	// Checks are the IDs of every check of that catalog, with their level.
	Checks map[string]check.Level
	// HarnessVersion names the verifying binary in messages.
	HarnessVersion string
}

// Verify checks a bundle and returns one line per problem; none means the
// bundle is whole, its counts and verdict follow from its results, and it
// was judged by the catalog this gwconform carries.
func Verify(path string, want Expect) []string {
	files, err := Read(path)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	mb, ok := files[ManifestFile]
	if !ok {
		return []string{"the bundle has no " + ManifestFile}
	}
	var m Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return []string{ManifestFile + " does not parse: " + err.Error()}
	}
	if m.Format != FormatVersion {
		bad("the bundle's format is %q; this gwconform reads %q", m.Format, FormatVersion)
	}

	// Every file is listed with its hash, and nothing else is there.
	required := []string{ConsoleFile, FleetFile}
	for _, w := range report.Writers {
		required = append(required, w.File)
	}
	for _, name := range required {
		if _, listed := m.Files[name]; !listed {
			bad("%s is not listed in the manifest", name)
		}
	}
	names := make([]string, 0, len(m.Files))
	for n := range m.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		b, ok := files[name]
		if !ok {
			bad("%s is listed in the manifest but missing", name)
			continue
		}
		if got := sum(b); got != m.Files[name] {
			bad("%s has SHA-256 %s, the manifest says %s: it was changed after the run", name, got, m.Files[name])
		}
	}
	for name := range files {
		if _, listed := m.Files[name]; !listed && name != ManifestFile && name != AttestationFile {
			bad("%s is in the bundle but not in the manifest", name)
		}
	}
	if m.FleetSHA256 != m.Files[FleetFile] {
		bad("the manifest's fleet_sha256 %s is not the hash of %s", m.FleetSHA256, FleetFile)
	}

	// The catalog is this gwconform's.
	if m.Catalog.Version != want.CatalogVersion {
		bad("the bundle was judged by catalog %s; this gwconform (%s) carries catalog %s: verify it with a gwconform of catalog %s",
			m.Catalog.Version, want.HarnessVersion, want.CatalogVersion, m.Catalog.Version)
	} else if m.Catalog.Hash != want.CatalogHash {
		bad("the bundle's catalog hash %s is not this gwconform's %s for catalog %s", m.Catalog.Hash, want.CatalogHash, want.CatalogVersion)
	}

	// Counts and verdict follow from the results.
	rb, ok := files[report.JSONFile]
	if !ok {
		return append(problems, "the bundle has no "+report.JSONFile)
	}
	var doc report.Document
	if err := json.Unmarshal(rb, &doc); err != nil {
		return append(problems, report.JSONFile+" does not parse: "+err.Error())
	}
	re := report.Recount(doc)
	if !reflect.DeepEqual(normal(re.Summary), normal(doc.Summary)) {
		bad("the counts in %s do not follow from its results (recounted: %s; written: %s)", report.JSONFile, counts(re.Summary), counts(doc.Summary))
	}
	if re.Verdict != doc.Verdict {
		bad("the verdict in %s is %s, but its results give %s", report.JSONFile, doc.Verdict, re.Verdict)
	}
	if m.Verdict != re.Verdict {
		bad("the manifest's verdict is %s, but the results give %s", m.Verdict, re.Verdict)
	}
	if doc.Effects != "" && m.Effects != doc.Effects || doc.Effects == "" && m.Effects != EffectsObserved && m.Effects != "" {
		bad("the manifest says effects %q, but %s says %q", m.Effects, report.JSONFile, doc.Effects)
	}
	if m.Seed != doc.Seed {
		bad("the manifest's seed %d is not the report's %d", m.Seed, doc.Seed)
	}

	// Every check of the catalog has a result, and no result is foreign.
	seen := map[string]report.Result{}
	for _, r := range doc.Results {
		if r.ID == "" {
			continue
		}
		if _, dup := seen[r.ID]; dup {
			bad("check %s has two results", r.ID)
		}
		seen[r.ID] = r
		if lvl, known := want.Checks[r.ID]; !known && m.Catalog.Version == want.CatalogVersion {
			bad("check %s is not in catalog %s", r.ID, want.CatalogVersion)
		} else if known && string(lvl) != r.Level {
			bad("check %s is %s in the catalog but %s in the report", r.ID, lvl, r.Level)
		}
	}
	if m.Catalog.Version == want.CatalogVersion {
		var missing []string
		for id := range want.Checks {
			if _, ok := seen[id]; !ok {
				missing = append(missing, id)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			bad("%d check(s) of the catalog have no result: %s", len(missing), abbreviate(missing))
		}
	}

	// Each report agrees with report.json (the JUnit file names the same
	// checks).
	for _, w := range report.Writers {
		if b, ok := files[w.File]; ok && w.Check != nil {
			if err := w.Check(b, doc); err != nil {
				bad("%s", err)
			}
		}
	}

	// A baseline in the bundle is one gwconform run accepts: no TODO, no
	// expiry more than 90 days after the run, and in a certification no
	// MUST check excused.
	if bb, ok := files[BaselineFile]; ok {
		day := m.StartedAt
		if day.IsZero() {
			day = m.EndedAt
		}
		if _, err := report.ParseBaselineOn(bb, day); err != nil {
			bad("%s would not be accepted: %v", BaselineFile, err)
		}
	}
	for _, r := range doc.Results {
		if r.Outcome == report.ExpectedFailure && r.Level == string(check.Must) && m.Mode == ModeCertified {
			bad("a certified run excuses no MUST failure; the baseline excused %s", r.ID)
		}
	}

	// A certification: run as one, nothing filtered, nothing left out.
	switch m.Mode {
	case ModeCertified:
		if doc.LabelFilter != "" {
			bad("a certified run has no label filter; this one had %q", doc.LabelFilter)
		}
		if doc.Verdict == report.VerdictPartial || len(doc.NotCovered) > 0 {
			bad("a certified run covers everything; this one left %d thing(s) uncovered", len(doc.NotCovered))
		}
		if doc.Effects != "" && !m.NoObserver {
			bad("a certified run observes the effects of its requests, or says --no-observer; this one did neither (%s)", doc.Effects)
		}
		for _, r := range doc.Results {
			// Effect checks are skipped by a run certified without an
			// observer on purpose (--no-observer), which the manifest
			// records; no other check is skipped.
			if r.Outcome == report.Skipped && r.Level != string(check.Info) && !(isSimOnly(r) && m.NoObserver) {
				bad("a certified run skips no check; %s was skipped (%s)", r.ID, r.Reason)
				break
			}
		}
		if m.Product.Name == "" || m.Product.Version == "" {
			bad("a certified bundle names the product and its version")
		}
	case ModeOrdinary:
	default:
		bad("the manifest's mode %q is neither %s nor %s", m.Mode, ModeCertified, ModeOrdinary)
	}

	// Nothing in the bundle can sign a request.
	for _, name := range sortedNames(files) {
		if leak := leaks(files[name]); leak != "" {
			bad("%s carries a credential: %.60s", name, leak)
		}
	}
	if fb, ok := files[FleetFile]; ok {
		var f fleet.Fleet
		if err := yaml.Unmarshal(fb, &f); err != nil {
			bad("%s does not parse as a fleet: %v", FleetFile, err)
		} else {
			for _, a := range f.Accounts {
				for _, k := range a.APIKeys {
					if k.Key != RedactedAPIKey || k.Secret != RedactedSecret {
						bad("%s carries an api key or secret of account %s", FleetFile, a.ID)
					}
				}
			}
		}
	}
	return problems
}

func sortedNames(files map[string][]byte) []string {
	out := make([]string, 0, len(files))
	for n := range files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// isSimOnly says a check judges the effects of a request through an
// observer: without one it is skipped.
func isSimOnly(r report.Result) bool {
	for _, t := range r.Tags {
		if t == "sim" || t == "effect" {
			return true
		}
	}
	return false
}

func normal(s report.Summary) report.Summary {
	if s.FailedChecks == nil {
		s.FailedChecks = []string{}
	}
	return s
}

func counts(s report.Summary) string {
	var parts []string
	for _, l := range check.Levels {
		c := s.ByLevel[string(l)]
		parts = append(parts, fmt.Sprintf("%s %d passed %d failed %d skipped", l, c.Passed, c.Failed, c.Skipped))
	}
	return strings.Join(parts, ", ")
}

func abbreviate(ids []string) string {
	if len(ids) > 5 {
		return strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
	}
	return strings.Join(ids, ", ")
}
