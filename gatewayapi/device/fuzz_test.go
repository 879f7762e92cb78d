package device

import (
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse validates any list of fields for any operation in either
// format. The fields are one string: records separated by \x1e, each
// "key\x1fvalue"; a value that starts with # is a JSON number, one that
// starts with ! a JSON literal (true, null), anything else a string.
// Seeds: testdata/fuzz/FuzzParse (the published examples, and every input
// that once broke a rule here).
//
// Parse must never panic; it refuses with a validation code, a field and a
// message; and what it accepts is within every bound the store, the admin
// API and fleet files rely on: hex identifiers of the right length in lower
// case, settings in range, and a state that a fleet file can load again.
func FuzzParse(f *testing.F) {
	f.Add(uint8(0), uint8(0), "api_key\x1fdemo-key\x1etimestamp\x1f20240501120000\x1esign\x1f0123456789abcdef0123456789abcdef"+
		"\x1emyservice_id\x1f5f3a9c0e1b2d4f6a8c0e1b2d\x1emac\x1fa4c138f0e2b1\x1esn\x1f0123456789abcdef0123456789abcd06"+
		"\x1etype\x1fLight Dimmer\x1edimming\x1f#50")
	f.Fuzz(func(t *testing.T, opByte, formatByte uint8, fields string) {
		op := Operations[int(opByte)%len(Operations)]
		format := Format(formatByte%2 + 1)
		pairs := fuzzPairs(fields)
		req, err := Parse(op, format, pairs)
		again, err2 := Parse(op, format, pairs)
		if !reflect.DeepEqual(req, again) || !reflect.DeepEqual(err, err2) {
			t.Fatalf("Parse is not deterministic: %+v %v, then %+v %v", req, err, again, err2)
		}
		if err != nil {
			if req != nil {
				t.Fatalf("Parse returned a request and an error %v", err)
			}
			switch err.Code {
			case CodeInvalidField, CodeMissingField, CodeUnexpectedField:
			default:
				t.Fatalf("Parse: code %s (%v)", err.Code, err)
			}
			if err.Message == "" || !knownField(err.Field, pairs) {
				t.Fatalf("Parse: error without a message or with a field of its own: %+v", err)
			}
			return
		}
		checkRequest(t, op, format, pairs, req)
	})
}

// knownField reports whether an error's field is a key of the request or
// a field of the interface (one that is missing).
func knownField(field string, pairs []Pair) bool {
	for _, p := range pairs {
		if p.Key == field {
			return true
		}
	}
	switch field {
	case FieldAPIKey, FieldTimestamp, FieldSign, FieldAccount, FieldMAC, FieldFormat, FieldSN, FieldDeviceID,
		FieldType, FieldMessageType, FieldMessageValue, FieldName:
		return true
	}
	for _, t := range Types {
		for i := range t.Fields {
			if field == t.Fields[i].Name || field == t.Fields[i].JSON {
				return true
			}
		}
	}
	return false
}

// fuzzPairs reads the fields of FuzzParse.
func fuzzPairs(fields string) []Pair {
	if fields == "" {
		return nil
	}
	var pairs []Pair
	for _, rec := range strings.Split(fields, "\x1e") {
		k, v, _ := strings.Cut(rec, "\x1f")
		val := Str(v)
		switch {
		case strings.HasPrefix(v, "#"):
			val = Value{Text: v[1:], Kind: Number}
		case strings.HasPrefix(v, "!"):
			val = Value{Text: v[1:], Kind: Other}
		}
		pairs = append(pairs, Pair{Key: k, Value: val})
	}
	return pairs
}

func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkRequest checks an accepted request against every bound.
func checkRequest(t *testing.T, op Operation, format Format, pairs []Pair, r *Request) {
	t.Helper()
	if r.Op != op {
		t.Fatalf("op %v, want %v", r.Op, op)
	}
	e := r.Envelope
	if strings.TrimSpace(e.APIKey) == "" || len(e.APIKey) > MaxAPIKeyLen {
		t.Fatalf("api_key %q", e.APIKey)
	}
	if !isDigits(e.Timestamp, 14) || e.Time.Format(TimestampLayout) != e.Timestamp {
		t.Fatalf("timestamp %q read as %v", e.Timestamp, e.Time)
	}
	if !lowerHex(e.Sign, 32) || !lowerHex(e.AccountID, 24) || !lowerHex(e.MAC, 12) {
		t.Fatalf("envelope hex fields %q %q %q", e.Sign, e.AccountID, e.MAC)
	}
	if e.Format != 0 && e.Format != format {
		t.Fatalf("format field %v in a %v body", e.Format, format)
	}
	// Every key is one the operation (and type) allows, named as the
	// format names it, and appears once.
	seen := map[string]bool{}
	for _, p := range pairs {
		if seen[p.Key] {
			t.Fatalf("%s appears twice and was accepted", p.Key)
		}
		seen[p.Key] = true
	}
	switch op {
	case SendCommand:
		if r.Type == nil || len(r.Settings) == 0 || !lowerHex(r.SN, 32) {
			t.Fatalf("command: type %v, %d settings, sn %q", r.Type, len(r.Settings), r.SN)
		}
		st := r.Type.DefaultState()
		for _, set := range r.Settings {
			if set.Index < 0 || set.Index >= len(r.Type.Fields) {
				t.Fatalf("setting index %d of a %s", set.Index, r.Type.Name)
			}
			fd := &r.Type.Fields[set.Index]
			switch fd.Kind {
			case Enum:
				if set.Num != math.Trunc(set.Num) || set.Num < 0 || int(set.Num) >= len(fd.Values) {
					t.Fatalf("%s: enum index %v", fd.Name, set.Num)
				}
			case Integer, Decimal:
				if math.IsNaN(set.Num) || set.Num < fd.Min || set.Num > fd.Max || fd.Kind == Integer && set.Num != math.Trunc(set.Num) {
					t.Fatalf("%s: %v out of range", fd.Name, set.Num)
				}
			case Text:
				if checkText(fd.Name, set.Text, fd.MaxLen, fd.Rule) != nil || set.Text != strings.TrimSpace(set.Text) {
					t.Fatalf("%s: text %q", fd.Name, set.Text)
				}
			}
		}
		st = r.Type.Apply(st, r.Settings...)
		// The state as the admin API shows it loads again as a fleet file
		// state (and so survives a dump and reload) to the same state.
		back, err := r.Type.ParseState(r.Type.StateMap(st))
		if err != nil {
			t.Fatalf("the state %v that the request sets does not load again: %v", r.Type.StateMap(st), err)
		}
		if back != st {
			t.Fatalf("the state %v loads again as %v", st, back)
		}
		for _, p := range pairs {
			if p.Key == "cooling point" || p.Key == "heating point" {
				if format != JSON {
					t.Fatalf("%q accepted in %v", p.Key, format)
				}
			}
		}
	case SendMessage:
		if !regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`).MatchString(r.MessageType) {
			t.Fatalf("message_type %q", r.MessageType)
		}
		if len(r.MessageValue) > MaxMessageValueLen || !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*=-?(0|[1-9][0-9]*)(\.[0-9]+)?$`).MatchString(r.MessageValue) {
			t.Fatalf("message_value %q", r.MessageValue)
		}
	case UpdateName:
		if !lowerHex(r.SN, 32) || CheckName(r.Name) != nil || r.Name != strings.TrimSpace(r.Name) ||
			!utf8.ValidString(r.Name) || utf8.RuneCountInString(r.Name) > MaxNameLen {
			t.Fatalf("rename: sn %q name %q", r.SN, r.Name)
		}
	}
}
