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

var (
	catalogOnce sync.Once
	catalogVal  check.Catalog
)

// Catalog is every check of the suite, by ID. It is built once, without
// Ginkgo, by declaring the checks into a list instead of a tree, so that
// every process knows every check (a --parallel worker declares only its
// own as specs) and hands it on as a value: to the engine, the reports,
// the bundles. It is the same for every run: catalogOnce keeps no run's
// state.
func Catalog() check.Catalog {
	catalogOnce.Do(func() {
		var list []check.Meta
		checks.New(engine.Listing(&list), checks.ModelBudget{}).Declare()
		catalogVal = check.NewCatalog(list)
	})
	return catalogVal
}

// CatalogHash is the SHA-256 of the catalog: every check's ID, level,
// section and assertion, in ID order.
func CatalogHash() string {
	h := sha256.New()
	for _, m := range Catalog().All() {
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
func Checks() []check.Meta { return Catalog().All() }
