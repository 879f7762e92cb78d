package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// loadReport reads a run's report.json, or the one inside a bundle.
func loadReport(path string) (report.Document, error) {
	var d report.Document
	b, err := safefile.ReadFile(path, safefile.MaxInput)
	if err != nil {
		return d, err
	}
	if strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz") || (len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b) {
		files, err := bundle.Read(path)
		if err != nil {
			return d, err
		}
		if b = files[report.JSONFile]; b == nil {
			return d, fmt.Errorf("%s has no %s", path, report.JSONFile)
		}
	}
	d, err = report.Read(b, conformance.Catalog())
	if err != nil {
		return d, fmt.Errorf("%s is not a gwconform report: %v", path, err)
	}
	return d, nil
}

// failedIn is the IDs of the MUST and SHOULD checks that failed (or were
// interrupted, or were expected failures) in a report or bundle, and the
// run's seed.
func failedIn(path string) ([]string, int64, error) {
	d, err := loadReport(path)
	if err != nil {
		return nil, 0, err
	}
	var ids []string
	for _, r := range d.Results {
		if r.ID == "" || r.Level == string(check.Info) {
			continue
		}
		switch r.Outcome {
		case report.Failed, report.Interrupted, report.ExpectedFailure:
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil, 0, errors.New(path + ": no check failed there; nothing to run again")
	}
	sort.Strings(ids)
	return ids, d.Seed, nil
}
