package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/docs"
)

// CatalogVersion names the catalog of checks. It changes whenever a check
// is added, removed or changes what it asserts, so that a report or bundle
// says which catalog judged it, and gwconform verify can tell a bundle made
// by another catalog. CatalogHash pins the exact content.
const CatalogVersion = "2026.11.2"

var previewOnce sync.Once

// catalog is every declared check. The suite's tree is built by Ginkgo
// when a run starts; a process that runs none (gwconform verify, checks)
// builds it once with a preview, which runs nothing. The catalog is the
// same for every run: what previewOnce and package check's registry keep
// is no run's state.
func catalog() []check.Meta {
	if all := check.All(); len(all) > 0 {
		return all
	}
	previewOnce.Do(func() {
		(&Env{}).declareChecks()
		ginkgo.PreviewSpecs("gwconform")
	})
	return check.All()
}

// CatalogHash is the SHA-256 of the catalog: every check's ID, level,
// section and assertion, in ID order.
func CatalogHash() string {
	h := sha256.New()
	for _, m := range catalog() {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\n", m.ID, m.Level, m.Section, m.Assertion)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SourceHashes are the SHA-256 of the published interface and of the
// CONTRACT this catalog was built from.
func SourceHashes() (iface, contract string) {
	a, b := sha256.Sum256(docs.Interface), sha256.Sum256(docs.Contract)
	return hex.EncodeToString(a[:]), hex.EncodeToString(b[:])
}

// Checks is every check of the catalog, sorted by ID.
func Checks() []check.Meta { return catalog() }
