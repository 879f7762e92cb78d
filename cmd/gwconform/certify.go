package main

import (
	"crypto/ed25519"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/bundle"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
	"github.com/gwdmi/gwtools/gatewayapi/version"
)

// certification is what a run needs to write a bundle.
type certification struct {
	// Bundle is the .tar.gz to write; empty writes none.
	Bundle string
	// Mode is bundle.ModeCertified or bundle.ModeOrdinary.
	Mode                    string
	Product, ProductVersion string
	// Baseline is the baseline file's content, when the run used one.
	Baseline []byte
	// Observer is the base URL that showed the run's effects (empty: not
	// observed); NoObserver says the run was told not to observe them.
	Observer   string
	NoObserver bool
	// SignKeyFile is --sign-key, SignKey the key read from it: the bundle
	// is signed with it (bundle.AttestationFile).
	SignKeyFile string
	SignKey     ed25519.PrivateKey
}

// harnessInfo is this gwconform's version, commit and Go version.
func harnessInfo() bundle.Harness {
	v := version.Get()
	commit := v.Commit
	if v.Modified && commit != "" {
		commit += "+modified"
	}
	return bundle.Harness{Version: v.Version, Commit: commit, GoVersion: v.GoVersion}
}

// certifiedRefusals lists why a run cannot be a certification: a certified
// run covers everything, so it takes no filter, no skip, no
// --allow-partial, and a fleet that holds every device type, a second
// gateway and a second account. Empty means it may run.
func certifiedRefusals(cfg types.SuiteConfig, allowPartial bool, f *fleet.Fleet, extra []string) []string {
	var out []string
	if len(cfg.FocusStrings) > 0 || len(cfg.FocusFiles) > 0 {
		out = append(out, "--mode certified runs every check: drop --ginkgo.focus")
	}
	if len(cfg.SkipStrings) > 0 || len(cfg.SkipFiles) > 0 {
		out = append(out, "--mode certified runs every check: drop --ginkgo.skip")
	}
	if cfg.LabelFilter != "" {
		out = append(out, "--mode certified runs every check: drop --ginkgo.label-filter")
	}
	if allowPartial {
		out = append(out, "--mode certified cannot be partial: drop --allow-partial")
	}
	out = append(out, extra...)
	out = append(out, fleetGaps(f)...)
	return out
}

// fleetGaps says what a fleet lacks for a full certification.
func fleetGaps(f *fleet.Fleet) []string {
	t, err := f.Target()
	if err != nil {
		return []string{"the fleet: " + err.Error()}
	}
	var out []string
	var missing []string
	for _, typ := range device.Types {
		if _, ok := t.Devices[typ.Name]; !ok {
			missing = append(missing, typ.Name)
		}
	}
	if len(missing) > 0 {
		out = append(out, fmt.Sprintf("the fleet's tested gateway %s has no %s: a certification covers every device type", t.MAC, strings.Join(missing, ", ")))
	}
	secondGateway, secondAccount := false, false
	for _, a := range f.Accounts {
		for _, g := range a.Gateways {
			if g.MAC != t.MAC && len(g.Devices) > 0 && a.ID == t.AccountID {
				secondGateway = true
			}
		}
		if a.ID != t.AccountID && len(a.APIKeys) > 0 && len(a.Gateways) > 0 {
			secondAccount = true
		}
	}
	if !secondGateway {
		out = append(out, "the fleet has no second gateway with a device on the tested account: a certification checks that a device is not reachable through a gateway it is not on")
	}
	if !secondAccount {
		out = append(out, "the fleet has no second account with a key and a gateway: a certification checks that one account's key cannot act on another's")
	}
	return out
}

// writeBundle writes the run's bundle: its reports from reportDir, the
// console, the fleet without secrets and the manifest.
func writeBundle(c certification, doc report.Document, reportDir string, console []byte, f *fleet.Fleet, failOn string, ended time.Time) error {
	iface, contract := conformance.SourceHashes()
	m := bundle.Manifest{
		Mode:      c.Mode,
		Product:   bundle.Product{Name: c.Product, Version: c.ProductVersion},
		Harness:   harnessInfo(),
		Catalog:   bundle.Catalog{Version: conformance.CatalogVersion, Hash: conformance.CatalogHash()},
		Sources:   bundle.Sources{Interface: iface, Contract: contract},
		Seed:      doc.Seed,
		Target:    doc.Target,
		StartedAt: doc.StartedAt,
		EndedAt:   ended,
		Verdict:   doc.Verdict,
		FailOn:    failOn,
		Effects:   doc.Effects,
		Observer:  c.Observer,
		// NoObserver is the certificate's record of --no-observer.
		NoObserver: c.NoObserver,
	}
	if m.Effects == "" && c.Observer != "" {
		m.Effects = bundle.EffectsObserved
	}
	if mp := doc.Model; mp != nil {
		m.Model = &bundle.ModelBudget{Seed: mp.Seed, Operations: mp.BudgetOperations, Seconds: mp.BudgetSeconds}
	}
	if m.Mode == "" {
		m.Mode = bundle.ModeOrdinary
	}
	return bundle.Write(c.Bundle, bundle.Input{Manifest: m, ReportDir: reportDir, Console: console, Fleet: f, Baseline: c.Baseline, SignKey: c.SignKey})
}

// verifyExpect is what this gwconform checks a bundle against.
func verifyExpect() bundle.Expect {
	checks := map[string]check.Level{}
	for _, m := range conformance.Checks() {
		checks[m.ID] = m.Level
	}
	return bundle.Expect{CatalogVersion: conformance.CatalogVersion, CatalogHash: conformance.CatalogHash(), Checks: checks, Catalog: conformance.Catalog(), HarnessVersion: harnessInfo().Version}
}

// productFile reads --product-file: "name: X" and "version: Y" lines.
func productFile(path string) (name, version string, err error) {
	b, err := safefile.ReadFile(path, 1<<20)
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			name = v
		case "version":
			version = v
		}
	}
	if name == "" || version == "" {
		return "", "", fmt.Errorf("%s needs a name: and a version: line", path)
	}
	return name, version, nil
}

// verifyHint is what gwconform verify needs for a bundle: the public key
// of the one that signed it, or --integrity-only for an unsigned one.
func verifyHint(c certification) string {
	if c.SignKey != nil {
		return "--key " + c.SignKeyFile + ".pub"
	}
	return "--integrity-only (unsigned: give run --sign-key KEY to sign it)"
}
