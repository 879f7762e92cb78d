package observer

import "testing"

// TestObserverLogGained: a plain CONTRACT 7 observer shows every message;
// one more message is one more at the end, or, in a log that keeps only its
// newest entries, the oldest gone and one more at the end. Anything else
// is not one message stored.
func TestObserverLogGained(t *testing.T) {
	m := func(v ...string) Log {
		var l Log
		for _, x := range v {
			l.All = append(l.All, Message{Type: "message", Value: x})
		}
		l.Total = len(l.All)
		return l
	}
	for _, c := range []struct {
		name          string
		before, after Log
		ok            bool
	}{
		{"one more", m("a=1"), m("a=1", "b=2"), true},
		{"the first", m(), m("b=2"), true},
		{"a full ring", m("a=1", "b=2"), m("b=2", "c=3"), true},
		{"none", m("a=1"), m("a=1"), false},
		{"two more", m("a=1"), m("a=1", "b=2", "c=3"), false},
		{"one changed", m("a=1"), m("x=1", "b=2"), false},
		{"counted one more", Log{Total: 7, Counted: true}, Log{Total: 8, Counted: true}, true},
		{"counted none", Log{Total: 7, Counted: true}, Log{Total: 7, Counted: true}, false},
	} {
		if got := c.before.Gained(c.after) == ""; got != c.ok {
			t.Errorf("%s: Gained says %q", c.name, c.before.Gained(c.after))
		}
	}
	if !m("a=1").Same(m("a=1")) || m("a=1").Same(m("a=2")) {
		t.Error("Same is wrong")
	}
}
