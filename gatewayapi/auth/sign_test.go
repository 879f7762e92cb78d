package auth

import (
	"strings"
	"testing"
)

func TestSignMatches(t *testing.T) {
	good := Sign("k", "s", "20240501120000")
	long := strings.Repeat("x", 300) // past the stack buffer
	for _, c := range []struct {
		key, sign string
		want      bool
	}{
		{"k", good, true},
		{"k", strings.ToUpper(good), true},
		{"k", good[:31], false},
		{"k", good + "0", false},
		{"k", strings.Repeat("0", 32), false},
		{"k2", good, false},
		{long, Sign(long, "s", "20240501120000"), true},
	} {
		if got := signMatches(c.key, "s", "20240501120000", c.sign); got != c.want {
			t.Errorf("signMatches(%.10s, %q) = %v", c.key, c.sign, got)
		}
	}
}
