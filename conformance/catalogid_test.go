package conformance

import "testing"

// catalogHashes pins the exact content of each catalog version. A change
// to what any check asserts (or a check added or removed) changes
// CatalogHash, and then CatalogVersion must change with it, so that a
// report or bundle made by one catalog is never taken for another's: bump
// CatalogVersion and add its hash here (the test prints it).
var catalogHashes = map[string]string{
	"2026.11.3": "fea019c9c9fe0ab686e361225a4ae676752e12b60d67d589adc4420fc0c41e76",
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
