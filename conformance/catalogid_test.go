package conformance

import (
	"strconv"
	"strings"
	"testing"
)

// catalogHashes pins the exact content of each catalog version. A change
// to what any check asserts (or a check added or removed) changes
// CatalogHash, and then CatalogVersion must change with it, so that a
// report or bundle made by one catalog is never taken for another's: bump
// CatalogVersion and add its hash here (the test prints it).
var catalogHashes = map[string]string{
	"2026.11.3":  "fea019c9c9fe0ab686e361225a4ae676752e12b60d67d589adc4420fc0c41e76",
	"2026.11.4":  "bb2ce8ee8ce1af1fc14fa2917de69d5fd77dd77c4bc9d0831536f4d5ff25bf16",
	"2026.11.5":  "3c31bff4d63a68136810b18445b60cdf62113c71c74bde42b106e540688a47f5",
	"2026.11.6":  "a5f8bd07a1bff344ed2726bf942cd30f90ac8b3d70db05b97b40b6f35cb44bab",
	"2026.11.7":  "06dfb8e00ec9d0532159821e7cb8e8d8181feaeaad210163c1e799d8cc9542f7",
	"2026.11.8":  "a6909368497d1033d3563bb11b72ee3c1978dd3fd6229c3680894df4b8a8125e",
	"2026.11.9":  "4c7d7e9084dfd200b48769f3431a18fa3a936826cb5ffae133b1fe4c6c6ccc46",
	"2026.11.10": "02cec8ca3492e23b08aba925082464a3b9f0963cad741945198c936c3d703306",
}

func TestCatalogVersionNamesItsContent(t *testing.T) {
	got := CatalogHash()
	want, ok := catalogHashes[CatalogVersion]
	if !ok || want != got {
		next := nextVersion(CatalogVersion)
		t.Fatalf("catalog %s has hash %s, pinned %q: the catalog changed without a new CatalogVersion; set CatalogVersion = %q in catalogid.go, add %q: %q to catalogHashes in catalogid_test.go, and regenerate docs/checks.md (make checks-doc)",
			CatalogVersion, got, want, next, next, got)
	}
	for v, h := range catalogHashes {
		if v != CatalogVersion && h == got {
			t.Errorf("catalog %s has the content of %s", CatalogVersion, v)
		}
	}
}

// nextVersion is the version after v: its last number plus one
// ("2026.11.3" -> "2026.11.4"), for the message that asks for a bump.
func nextVersion(v string) string {
	i := strings.LastIndex(v, ".")
	n, err := strconv.Atoi(v[i+1:])
	if err != nil {
		return v + ".1"
	}
	return v[:i+1] + strconv.Itoa(n+1)
}

func TestNextVersion(t *testing.T) {
	for v, want := range map[string]string{"2026.11.3": "2026.11.4", "2026.11.9": "2026.11.10", "x": "x.1"} {
		if got := nextVersion(v); got != want {
			t.Errorf("nextVersion(%q) = %q, want %q", v, got, want)
		}
	}
}
