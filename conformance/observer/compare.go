package observer

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Values writes every value of a device's state as text, so that 40, 40.0
// and "40" compare equal across JSON decoding.
func Values(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		case int64:
			out[k] = strconv.FormatInt(x, 10)
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

// SameNumber compares two numbers written as text; text that is not a
// number compares as text.
func SameNumber(a, b string) bool {
	x, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	y, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if err1 != nil || err2 != nil {
		return strings.TrimSpace(a) == strings.TrimSpace(b)
	}
	return math.Abs(x-y) < 1e-9
}

// SameValues says whether two states written as text (Values) hold the
// same fields, each with the same value (SameNumber).
func SameValues(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !SameNumber(v, w) {
			return false
		}
	}
	return true
}
