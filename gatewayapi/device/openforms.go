package device

import (
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// OpenForms is how gwsim reads the forms that neither text decides (the
// CONTRACT's preamble: "a form that neither text forbids is open"): a
// plus sign, leading zeros, white space, .5, a decimal comma, an exponent
// or digits of another script in a number's text; white space around an
// enumerated word; a type name in another letter case; second 60; the
// format argument in upper case; padded opt or control characters in it;
// a message_type with characters beyond letters, digits, _ . -; text
// beside control in an XML body; a JSON member twice. The harness's rule
// table (gatewayapi/oracle) lists them; they never fail a check.
type OpenForms uint8

const (
	// RefuseOpen refuses every open form: gwsim's default, a strict
	// service to test an app against.
	RefuseOpen OpenForms = iota
	// AcceptOpen accepts every open form, read as a lenient service
	// would: the other reading, which no check may fail either.
	AcceptOpen
)

// ParseOpenForms reads the --open-forms flag's value.
func ParseOpenForms(s string) (OpenForms, bool) {
	switch s {
	case "refuse", "":
		return RefuseOpen, true
	case "accept":
		return AcceptOpen, true
	}
	return 0, false
}

func (o OpenForms) String() string {
	if o == AcceptOpen {
		return "accept"
	}
	return "refuse"
}

// plainNumber reports whether s is -?(0|[1-9][0-9]*)(\.[0-9]+)?: a number
// in the form of the published examples (fraction only for a decimal).
func plainNumber(s string, fraction bool) bool {
	s = strings.TrimPrefix(s, "-")
	whole := digitRun(s)
	if whole == 0 || whole > 1 && s[0] == '0' {
		return false
	}
	s = s[whole:]
	if s == "" {
		return true
	}
	return fraction && s[0] == '.' && len(s) > 1 && digitRun(s[1:]) == len(s)-1
}

// lenientNumber reads a number's text the way a lenient service does:
// white space around it, digits of any script, a decimal comma, a plus
// sign, leading zeros, .5 and 5., an exponent, and with hex 0x
// hexadecimal. It gives the exact value.
func lenientNumber(s string, hex bool) (*big.Rat, bool) {
	if len(s) > 4*maxNumberLen {
		return nil, false
	}
	var b strings.Builder
	for _, r := range strings.TrimFunc(s, unicode.IsSpace) {
		switch {
		case r == ',':
			b.WriteByte('.')
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case unicode.IsDigit(r):
			start := r
			for unicode.IsDigit(start - 1) {
				start--
			}
			b.WriteByte(byte('0' + (r-start)%10))
		default:
			return nil, false
		}
	}
	u := b.String()
	neg := false
	if u != "" && (u[0] == '+' || u[0] == '-') {
		neg, u = u[0] == '-', u[1:]
	}
	x := new(big.Rat)
	if l := strings.ToLower(u); hex && strings.HasPrefix(l, "0x") {
		n, err := strconv.ParseUint(l[2:], 16, 63)
		if err != nil || l[2:] == "" || l[2] == '+' {
			return nil, false
		}
		x.SetInt64(int64(n))
	} else {
		mant, exp, hasExp := strings.Cut(strings.ToLower(u), "e")
		whole := digitRun(mant)
		rest := mant[whole:]
		frac := ""
		if rest != "" {
			if rest[0] != '.' || digitRun(rest[1:]) != len(rest)-1 {
				return nil, false
			}
			frac = rest[1:]
		}
		if whole == 0 && frac == "" {
			return nil, false
		}
		lit := "0" + mant[:whole]
		if frac != "" {
			lit += "." + frac
		}
		if hasExp {
			e := strings.TrimLeft(exp, "+-")
			if len(exp)-len(e) > 1 || e == "" || len(e) > 4 || digitRun(e) != len(e) {
				return nil, false
			}
			lit += "e" + exp
		}
		if _, ok := x.SetString(lit); !ok {
			return nil, false
		}
	}
	if neg {
		x.Neg(x)
	}
	return x, true
}

// jsonNumber is the exact value of a JSON number literal (CONTRACT 2: a
// JSON number in any JSON number syntax; its value decides).
func jsonNumber(s string) (*big.Rat, bool) {
	if len(s) > 4*maxNumberLen || hugeExponent(s) {
		// An exponent beyond 4 digits: no value in any field's range,
		// and not worth the work of computing it exactly.
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// hugeExponent reports whether a number's exponent has more than 4
// digits.
func hugeExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return false
	}
	e := strings.TrimLeft(s[i+1:], "+-0")
	return len(e) > 4
}

// messageTypeOK is CONTRACT 3's non-empty token: letters, digits, _ . -
// (refuse), or any text without white space or control characters
// (accept).
func messageTypeOK(s string, open OpenForms) bool {
	if s == "" || len(s) > MaxMessageTypeLen {
		return false
	}
	for _, r := range s {
		plain := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '.' || r == '-'
		switch {
		case plain:
		case open == AcceptOpen && !unicode.IsSpace(r) && !unicode.IsControl(r) && r != utf8.RuneError:
		default:
			return false
		}
	}
	return true
}

// messageValueOK is <setting_name>=<number> (published 2.4), the setting
// name [A-Za-z_][A-Za-z0-9_.-]* (CONTRACT 3), the number in its plain
// form, or (accept) in any form a lenient reading takes.
func messageValueOK(s string, open OpenForms) bool {
	if len(s) > MaxMessageValueLen {
		return false
	}
	name, num, ok := strings.Cut(s, "=")
	if !ok || name == "" || !(name[0] == '_' || isASCIILetter(name[0])) {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(isASCIILetter(c) || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	if plainNumber(num, true) {
		return true
	}
	_, lenient := lenientNumber(num, true)
	return open == AcceptOpen && lenient
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
