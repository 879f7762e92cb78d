package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/checks"
	"github.com/gwdmi/gwtools/conformance/engine"
	"github.com/gwdmi/gwtools/docs"
)

var catalogOnce sync.Once

// catalog is every check of the suite, sorted by ID. It is built once,
// without Ginkgo, by declaring the checks into a list instead of a tree,
// and registered with package check, so that every process knows every
// check (a --parallel worker declares only its own as specs). The catalog
// is the same for every run: what catalogOnce and package check's
// registry keep is no run's state.
func declaredChecks() []check.Meta {
	catalogOnce.Do(func() {
		var list []check.Meta
		checks.New(engine.Listing(&list), checks.ModelBudget{}).Declare()
		for _, m := range list {
			check.Register(m)
		}
	})
	return check.All()
}

// CatalogHash is the SHA-256 of the catalog: every check's ID, level,
// section and assertion, in ID order.
func CatalogHash() string {
	h := sha256.New()
	for _, m := range declaredChecks() {
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
func Checks() []check.Meta { return declaredChecks() }
