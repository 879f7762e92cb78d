package device

import (
	"regexp"
	"testing"
)

// plainNumber says exactly what the published form's regular
// expressions say.
func TestNumberSyntax(t *testing.T) {
	integerRe := regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	decimalRe := regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)
	cases := []string{"", "+", "-", ".", "+.", "-.5", "5.", "5.5", "05", "+0", "-0", "0.5", "00.5", "1e5", "1.2.3", "..5", "5..", " 5", "5 ", "١", "0x1F",
		"NaN", "Inf", "-12.25", "+.0", "12a", "a12", "1_000", "99999999999999999999"}
	for _, s := range cases {
		if got, want := plainNumber(s, false), integerRe.MatchString(s); got != want {
			t.Errorf("plainNumber(%q, false) = %v, want %v", s, got, want)
		}
		if got, want := plainNumber(s, true), decimalRe.MatchString(s); got != want {
			t.Errorf("plainNumber(%q, true) = %v, want %v", s, got, want)
		}
	}
	for _, s := range []string{"", "2024050112000", "20240501120000", "2024050112000a", "202405011200000"} {
		if got, want := isDigits(s, 14), regexp.MustCompile(`^[0-9]{14}$`).MatchString(s); got != want {
			t.Errorf("isDigits(%q) = %v", s, got)
		}
	}
}
