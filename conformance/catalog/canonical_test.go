package catalog

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// HexOnly keeps what lowering every character and keeping 0-9 and a-f
// keeps, on the forms of a mac and a sn a request may write and on random
// text with letters of other scripts (the Kelvin sign lowers to "k"),
// and returns a key already in that form as it is.
func TestHexOnlyKeepsTheLoweredHexDigits(t *testing.T) {
	want := func(s string) string {
		var b strings.Builder
		for _, r := range strings.ToLower(s) {
			if r >= '0' && r <= '9' || r >= 'a' && r <= 'f' {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	cases := []string{"", "001122aabbcc", "00:11:22:AA:BB:CC", "00-11-22-aa-bb-cc", "SN-00A1", "\u212a", "\xffAB", "ＡＢ"}
	r := rand.New(rand.NewPCG(5, 6))
	runes := []rune("09afAFgG:-\u212aé\u0130 ")
	for i := 0; i < 20000; i++ {
		b := make([]rune, r.IntN(14))
		for j := range b {
			b[j] = runes[r.IntN(len(runes))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got := HexOnly(s); got != want(s) {
			t.Fatalf("HexOnly(%q) = %q, want %q", s, got, want(s))
		}
	}
	if got := testing.AllocsPerRun(100, func() { HexOnly("001122aabbcc") }); got != 0 {
		t.Fatalf("HexOnly of a key already in its form allocates %v times", got)
	}
}
