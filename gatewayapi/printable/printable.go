// Package printable makes text that came from elsewhere (a target's
// answer, an app's request) safe to show on a terminal or in a text
// report: control characters cannot recolour the terminal, set its title,
// move the cursor or hide what follows.
package printable

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// String returns s with every control character escaped as Go writes it
// in a string literal (\x1b, \n, \t, \u202e): C0 and C1 controls, DEL,
// the Unicode bidirectional controls (which reorder what a reader sees)
// and bytes that are not UTF-8. A backslash is left as it is. Everything
// else, other scripts included, is kept; a string with nothing to escape
// is returned as it came, without allocating.
func String(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case unsafe(r, n):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafe(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// Lines is String applied to each line of a text of several lines (an
// answer's body, a report): the line breaks are kept, everything else
// String escapes is escaped.
func Lines(s string) string {
	if String(s) == s {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = String(l)
	}
	return strings.Join(lines, "\n")
}
