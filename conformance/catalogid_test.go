package conformance

import "testing"

// catalogHashes pins the exact content of each catalog version. A change
// to what any check asserts (or a check added or removed) changes
// CatalogHash, and then CatalogVersion must change with it, so that a
// report or bundle made by one catalog is never taken for another's: bump
// CatalogVersion and add its hash here (the test prints it).
var catalogHashes = map[string]string{
	"2026.11.3": "67512ad08a03cb31ecd5621827720d6ec38cba1309c1c387af57d6d7b9ebf758",
}

func TestCatalogVersionNamesItsContent(t *testing.T) {
	got := CatalogHash()
	want, ok := catalogHashes[CatalogVersion]
	if !ok || want != got {
		t.Fatalf("catalog %s has hash %s, pinned %q: the catalog changed without a new CatalogVersion; bump it in catalogid.go and pin %q: %q in catalogid_test.go",
			CatalogVersion, got, want, CatalogVersion, got)
	}
	for v, h := range catalogHashes {
		if v != CatalogVersion && h == got {
			t.Errorf("catalog %s has the content of %s", CatalogVersion, v)
		}
	}
}
