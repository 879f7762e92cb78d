package printable

import "testing"

// TestString: what a hostile target can put in an error code or a message
// (ESC sequences that recolour the terminal or set its title, a carriage
// return that hides what came before, the bidi override, a C1 CSI, bytes
// that are not UTF-8) comes out as visible escapes; ordinary text,
// accents and other scripts are kept as they are.
func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"invalid_field":            "invalid_field",
		"Température 21,5 °C — 温度": "Température 21,5 °C — 温度",
		"\x1b[31mred\x1b[0m":       `\x1b[31mred\x1b[0m`,
		"\x1b]0;owned\x07title":    `\x1b]0;owned\atitle`,
		"ok\rFAIL":                 `ok\rFAIL`,
		"line\nnext\ttab":          `line\nnext\ttab`,
		"a\u202eevil":              `a\u202eevil`,
		"c1\u009b31m":              `c1\u009b31m`,
		"del\x7f":                  `del\x7f`,
		"bad\xffutf8":              `bad\xffutf8`,
		`back\slash`:               `back\slash`,
		"":                         "",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	clean := "nothing to escape here"
	if n := testing.AllocsPerRun(10, func() { _ = String(clean) }); n != 0 {
		t.Errorf("a clean string allocates %v times", n)
	}
}
