package catalog

import (
	"strconv"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Canonical is the state a valid value must leave, from the harness's own
// rule table (package oracle), never package device's parsing: an
// enumerated value in the case of the published table, a number in its
// shortest decimal form, text as stored. num reads v as a JSON number in
// any syntax: its value (CONTRACT 2).
func Canonical(f *oracle.Field, v string, num bool) (string, bool) {
	val := oracle.Str(v)
	if num {
		val = oracle.Num(v)
	}
	c, ok := oracle.Canonical(f.Name, val)
	if !ok {
		return "", false
	}
	switch x := c.(type) {
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case string:
		return x, true
	}
	return "", false
}

// HexOnly is an identifier's hexadecimal digits in lower case: the key
// of a gateway or device whatever accepted form a request wrote it in.
// It is asked for every request and every read of the observer, most
// often of a key already so, which it returns as it is. No character
// outside ASCII lowers to a hexadecimal digit, so it looks at bytes.
func HexOnly(s string) string {
	i := 0
	for i < len(s) && isLowerHex(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, i, len(s))
	copy(b, s[:i])
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case isLowerHex(c):
			b = append(b, c)
		case 'A' <= c && c <= 'F':
			b = append(b, c+'a'-'A')
		}
	}
	return string(b)
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// FoldEnums writes the enumerated values of a type's state in lower case,
// for checks that do not judge their letter case.
func FoldEnums(t *oracle.Type, m map[string]string) {
	for _, fd := range t.Fields {
		if v, ok := m[fd.Name]; ok && fd.Kind == oracle.Enum {
			m[fd.Name] = strings.ToLower(v)
		}
	}
}
