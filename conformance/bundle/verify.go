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
	// Checks are the IDs of every check of that catalog, with their level;
	// Catalog is that catalog, for what report.json leaves to it
	// (report.Read).
	Checks  map[string]check.Level
	Catalog check.Catalog
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
	m, problem := readManifest(files)
	if problem != "" {
		return []string{problem}
	}
	v := &verifier{files: files, m: m, want: want}
	if m.Format != FormatVersion {
		v.bad("the bundle's format is %q; this gwconform reads %q", m.Format, FormatVersion)
	}
	v.checkListing()
	v.checkCatalog()
	doc, problem := readReport(files, want.Catalog)
	if problem != "" {
		return append(v.problems, problem)
	}
	v.doc = doc
	v.checkCounts()
	v.checkResults()
	v.checkReports()
	v.checkBaseline()
	v.checkCertified()
	v.checkCredentials()
	return v.problems
}

// verifier gathers the problems of one bundle while Verify's steps look at
// its files, its manifest and its report.json.
type verifier struct {
	files    map[string][]byte
	m        Manifest
	doc      report.Document
	want     Expect
	problems []string
}

// bad records one problem.
func (v *verifier) bad(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

// readManifest parses the bundle's manifest; without one nothing else can
// be checked, so the problem is returned alone.
func readManifest(files map[string][]byte) (m Manifest, problem string) {
	mb, ok := files[ManifestFile]
	if !ok {
		return m, "the bundle has no " + ManifestFile
	}
	if err := json.Unmarshal(mb, &m); err != nil {
		return m, ManifestFile + " does not parse: " + err.Error()
	}
	return m, ""
}

// readReport parses the bundle's report.json, from which the counts, the
// verdict and every other report follow.
func readReport(files map[string][]byte, cat check.Catalog) (doc report.Document, problem string) {
	rb, ok := files[report.JSONFile]
	if !ok {
		return doc, "the bundle has no " + report.JSONFile
	}
	doc, err := report.Read(rb, cat)
	if err != nil {
		return doc, report.JSONFile + " does not parse: " + err.Error()
	}
	return doc, ""
}

// checkListing checks that every file is listed in the manifest with its
// hash, and that nothing else is there.
func (v *verifier) checkListing() {
	m, files := &v.m, v.files
	required := []string{ConsoleFile, FleetFile}
	for _, w := range report.Writers {
		required = append(required, w.File)
	}
	for _, name := range required {
		if _, listed := m.Files[name]; !listed {
			v.bad("%s is not listed in the manifest", name)
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
			v.bad("%s is listed in the manifest but missing", name)
			continue
		}
		if got := sum(b); got != m.Files[name] {
			v.bad("%s has SHA-256 %s, the manifest says %s: it was changed after the run", name, got, m.Files[name])
		}
	}
	for name := range files {
		if _, listed := m.Files[name]; !listed && name != ManifestFile && name != AttestationFile {
			v.bad("%s is in the bundle but not in the manifest", name)
		}
	}
	if m.FleetSHA256 != m.Files[FleetFile] {
		v.bad("the manifest's fleet_sha256 %s is not the hash of %s", m.FleetSHA256, FleetFile)
	}
}

// checkCatalog checks that the bundle was judged by this gwconform's
// catalog: another one's verdicts cannot be verified here.
func (v *verifier) checkCatalog() {
	m, want := &v.m, v.want
	if m.Catalog.Version != want.CatalogVersion {
		v.bad("the bundle was judged by catalog %s; this gwconform (%s) carries catalog %s: verify it with a gwconform of catalog %s",
			m.Catalog.Version, want.HarnessVersion, want.CatalogVersion, m.Catalog.Version)
	} else if m.Catalog.Hash != want.CatalogHash {
		v.bad("the bundle's catalog hash %s is not this gwconform's %s for catalog %s", m.Catalog.Hash, want.CatalogHash, want.CatalogVersion)
	}
}

// checkCounts checks that the counts and the verdict, in report.json and
// in the manifest, follow from the results, and that the two agree.
func (v *verifier) checkCounts() {
	m, doc := &v.m, &v.doc
	re := report.Recount(*doc)
	if !reflect.DeepEqual(normal(re.Summary), normal(doc.Summary)) {
		v.bad("the counts in %s do not follow from its results (recounted: %s; written: %s)", report.JSONFile, counts(re.Summary), counts(doc.Summary))
	}
	if re.Verdict != doc.Verdict {
		v.bad("the verdict in %s is %s, but its results give %s", report.JSONFile, doc.Verdict, re.Verdict)
	}
	if m.Verdict != re.Verdict {
		v.bad("the manifest's verdict is %s, but the results give %s", m.Verdict, re.Verdict)
	}
	if doc.Effects != "" && m.Effects != doc.Effects || doc.Effects == "" && m.Effects != EffectsObserved && m.Effects != "" {
		v.bad("the manifest says effects %q, but %s says %q", m.Effects, report.JSONFile, doc.Effects)
	}
	if m.Seed != doc.Seed {
		v.bad("the manifest's seed %d is not the report's %d", m.Seed, doc.Seed)
	}
	switch mp := doc.Model; {
	case mp == nil && m.Model != nil:
		v.bad("the manifest records a model-based phase that %s does not have", report.JSONFile)
	case mp != nil && (m.Model == nil || m.Model.Seed != mp.Seed || m.Model.Operations != mp.BudgetOperations || m.Model.Seconds != mp.BudgetSeconds):
		v.bad("the manifest's model-based phase (%+v) is not the one %s records (seed %d, %d operations, %g s)", m.Model, report.JSONFile, mp.Seed, mp.BudgetOperations, mp.BudgetSeconds)
	}
}

// checkResults checks that every check of the catalog has one result, at
// its catalog level, and that no result is foreign.
func (v *verifier) checkResults() {
	m, want := &v.m, v.want
	seen := map[string]report.Result{}
	for _, r := range v.doc.Results {
		if r.ID == "" {
			continue
		}
		if _, dup := seen[r.ID]; dup {
			v.bad("check %s has two results", r.ID)
		}
		seen[r.ID] = r
		if lvl, known := want.Checks[r.ID]; !known && m.Catalog.Version == want.CatalogVersion {
			v.bad("check %s is not in catalog %s", r.ID, want.CatalogVersion)
		} else if known && string(lvl) != r.Level {
			v.bad("check %s is %s in the catalog but %s in the report", r.ID, lvl, r.Level)
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
			v.bad("%d check(s) of the catalog have no result: %s", len(missing), abbreviate(missing))
		}
	}
}

// checkReports checks that each report agrees with report.json (the JUnit
// file names the same checks).
func (v *verifier) checkReports() {
	for _, w := range report.Writers {
		if b, ok := v.files[w.File]; ok && w.Check != nil {
			if err := w.Check(b, v.doc); err != nil {
				v.bad("%s", err)
			}
		}
	}
}

// checkBaseline checks that a baseline in the bundle is one gwconform run
// accepts: no TODO, no expiry more than 90 days after the run, and in a
// certification no MUST check excused.
func (v *verifier) checkBaseline() {
	m := &v.m
	if bb, ok := v.files[BaselineFile]; ok {
		day := m.StartedAt
		if day.IsZero() {
			day = m.EndedAt
		}
		if _, err := report.ParseBaselineOn(bb, day); err != nil {
			v.bad("%s would not be accepted: %v", BaselineFile, err)
		}
	}
	for _, r := range v.doc.Results {
		if r.Outcome == report.ExpectedFailure && r.Level == string(check.Must) && m.Mode == ModeCertified {
			v.bad("a certified run excuses no MUST failure; the baseline excused %s", r.ID)
		}
	}
}

// checkCertified checks the manifest's mode, and that a certification was
// run as one: nothing filtered, nothing left out.
func (v *verifier) checkCertified() {
	m, doc := &v.m, &v.doc
	switch m.Mode {
	case ModeCertified:
		if doc.LabelFilter != "" {
			v.bad("a certified run has no label filter; this one had %q", doc.LabelFilter)
		}
		if doc.Verdict == report.VerdictPartial || len(doc.NotCovered) > 0 {
			v.bad("a certified run covers everything; this one left %d thing(s) uncovered", len(doc.NotCovered))
		}
		if doc.Effects != "" && !m.NoObserver {
			v.bad("a certified run observes the effects of its requests, or says --no-observer; this one did neither (%s)", doc.Effects)
		}
		for _, r := range doc.Results {
			// Effect checks are skipped by a run certified without an
			// observer on purpose (--no-observer), which the manifest
			// records; no other check is skipped.
			if r.Outcome == report.Skipped && r.Level != string(check.Info) && !(isSimOnly(r) && m.NoObserver) {
				v.bad("a certified run skips no check; %s was skipped (%s)", r.ID, r.Reason)
				break
			}
		}
		if m.Product.Name == "" || m.Product.Version == "" {
			v.bad("a certified bundle names the product and its version")
		}
	case ModeOrdinary:
	default:
		v.bad("the manifest's mode %q is neither %s nor %s", m.Mode, ModeCertified, ModeOrdinary)
	}
}

// checkCredentials checks that nothing in the bundle can sign a request:
// no file carries a credential, and the fleet's keys are redacted.
func (v *verifier) checkCredentials() {
	files := v.files
	for _, name := range sortedNames(files) {
		if leak := leaks(files[name]); leak != "" {
			v.bad("%s carries a credential: %.60s", name, leak)
		}
	}
	if fb, ok := files[FleetFile]; ok {
		var f fleet.Fleet
		if err := yaml.Unmarshal(fb, &f); err != nil {
			v.bad("%s does not parse as a fleet: %v", FleetFile, err)
		} else {
			for _, a := range f.Accounts {
				for _, k := range a.APIKeys {
					if k.Key != RedactedAPIKey || k.Secret != RedactedSecret {
						v.bad("%s carries an api key or secret of account %s", FleetFile, a.ID)
					}
				}
			}
		}
	}
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
