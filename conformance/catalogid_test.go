package conformance

import "testing"

// catalogHashes pins the exact content of each catalog version. A change
// to what any check asserts (or a check added or removed) changes
// CatalogHash, and then CatalogVersion must change with it, so that a
// report or bundle made by one catalog is never taken for another's: bump
// CatalogVersion and add its hash here (the test prints it).
var catalogHashes = map[string]string{
	"2026.11.3": "46de9355633a2370eb8c6bf017a841d13b29004d55aee2172ed75e0536e5dad5",
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
