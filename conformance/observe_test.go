package conformance

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// TestObserverLogGained: a plain CONTRACT 7 observer shows every message;
// one more message is one more at the end, or, in a log that keeps only its
// newest entries, the oldest gone and one more at the end. Anything else
// is not one message stored.
func TestObserverLogGained(t *testing.T) {
	m := func(v ...string) msgLog {
		var l msgLog
		for _, x := range v {
			l.All = append(l.All, message{Type: "message", Value: x})
		}
		l.Total = len(l.All)
		return l
	}
	for _, c := range []struct {
		name          string
		before, after msgLog
		ok            bool
	}{
		{"one more", m("a=1"), m("a=1", "b=2"), true},
		{"the first", m(), m("b=2"), true},
		{"a full ring", m("a=1", "b=2"), m("b=2", "c=3"), true},
		{"none", m("a=1"), m("a=1"), false},
		{"two more", m("a=1"), m("a=1", "b=2", "c=3"), false},
		{"one changed", m("a=1"), m("x=1", "b=2"), false},
		{"counted one more", msgLog{Total: 7, counted: true}, msgLog{Total: 8, counted: true}, true},
		{"counted none", msgLog{Total: 7, counted: true}, msgLog{Total: 7, counted: true}, false},
	} {
		if got := c.before.gained(c.after) == ""; got != c.ok {
			t.Errorf("%s: gained says %q", c.name, c.before.gained(c.after))
		}
	}
	if !m("a=1").same(m("a=1")) || m("a=1").same(m("a=2")) {
		t.Error("same is wrong")
	}
}

// TestPreflightCauses: the lines a refused pre-flight gives name the cause
// and never a whole api key.
func TestPreflightCauses(t *testing.T) {
	for _, c := range []struct{ base, want string }{
		{"http://h:8080/v1", "expected at http://h:8080/v1/services/…, and you gave …/v1: give --target http://h:8080"},
		{"http://h:8080/api/v1/", "expected at http://h:8080/api/v1/services/…, and you gave …/v1: give --target http://h:8080/api"},
		{"http://h:8080", "every operation answered HTTP 404 (text/html); the operations are expected at http://h:8080/v1/services/…"},
	} {
		if got := notFoundCause(c.base, &client.Response{Status: 404, ContentType: "text/html"}); !strings.Contains(got, c.want) {
			t.Errorf("%s: %s", c.base, got)
		}
	}
	if got := maskKey("vendor-key-1"); got != "vend…" {
		t.Errorf("maskKey: %q", got)
	}
	if got := maskKey("abc"); got != "…" {
		t.Errorf("maskKey of a short key: %q", got)
	}
}
