package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

func TestSign(t *testing.T) {
	// printf %s demo-keydemo-secret20240102030405 | md5sum
	if got := Sign("demo-key", "demo-secret", "20240102030405"); got != "f25360a51e06ff1d3d5a2fecf15d7cbd" {
		t.Fatalf("Sign = %s", got)
	}
	// A known vector: md5("") and md5("abc").
	if Sign("", "", "") != "d41d8cd98f00b204e9800998ecf8427e" || Sign("a", "b", "c") != "900150983cd24fb0d6963f7d28e17f72" {
		t.Error("Sign is not md5 of the plain concatenation")
	}
	if Sign("ab", "", "c") != Sign("a", "b", "c") {
		t.Error("Sign must not add separators")
	}
}

func TestTimestamp(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := Timestamp(at, nil); got != "20240102030405" {
		t.Errorf("UTC: %s", got)
	}
	tokyo := time.FixedZone("JST", 9*3600)
	if got := Timestamp(at, tokyo); got != "20240102120405" {
		t.Errorf("JST: %s", got)
	}
}

func TestParseScheme(t *testing.T) {
	for in, want := range map[string]Scheme{"": MD5, "md5": MD5, "MD5": MD5, "format": FormatOnly, "off": Off} {
		if got, err := ParseScheme(in); err != nil || got != want {
			t.Errorf("ParseScheme(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseScheme("sha1"); err == nil {
		t.Error("sha1 accepted")
	}
}

type checkCase struct {
	name  string
	a     *Authenticator
	e     *device.Envelope
	code  string
	field string
}

func TestCheck(t *testing.T) {
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	keys := map[string]Key{"k1": {Secret: "s1", AccountID: "aaaaaaaaaaaaaaaaaaaaaaaa"}, "k2": {Secret: "s2", AccountID: "bbbbbbbbbbbbbbbbbbbbbbbb"}}
	env := func(key, account string, at time.Time, loc *time.Location, sign string) *device.Envelope {
		ts := Timestamp(at, loc)
		tm, _ := time.Parse(device.TimestampLayout, ts)
		if sign == "" {
			sign = Sign(key, keys[key].Secret, ts)
		}
		return &device.Envelope{APIKey: key, Timestamp: ts, Time: tm, Sign: sign, AccountID: account}
	}
	a := &Authenticator{Keys: keys, Scheme: MD5, Window: DefaultWindow, Now: func() time.Time { return now }}
	A := "aaaaaaaaaaaaaaaaaaaaaaaa"
	cases := []checkCase{
		{"good", a, env("k1", A, now, nil, ""), "", ""},
		{"upper-case sign", a, env("k1", A, now, nil, strings.ToUpper(Sign("k1", "s1", Timestamp(now, nil)))), "", ""},
		{"300 s old", a, env("k1", A, now.Add(-300*time.Second), nil, ""), "", ""},
		{"300 s ahead", a, env("k1", A, now.Add(300*time.Second), nil, ""), "", ""},
		{"301 s old", a, env("k1", A, now.Add(-301*time.Second), nil, ""), device.CodeStaleTimestamp, device.FieldTimestamp},
		{"301 s ahead", a, env("k1", A, now.Add(301*time.Second), nil, ""), device.CodeStaleTimestamp, device.FieldTimestamp},
		{"unknown key", a, env("k9", A, now, nil, strings.Repeat("0", 32)), device.CodeUnknownAPIKey, device.FieldAPIKey},
		{"key of another account", a, env("k2", A, now, nil, ""), device.CodeAccountMismatch, device.FieldAccount},
		{"wrong sign", a, env("k1", A, now, nil, strings.Repeat("0", 32)), device.CodeBadSignature, device.FieldSign},
		{"sign of another secret", a, env("k1", A, now, nil, Sign("k1", "s2", Timestamp(now, nil))), device.CodeBadSignature, device.FieldSign},
		{"window 0 disables", &Authenticator{Keys: keys, Now: a.Now}, env("k1", A, now.Add(-240*time.Hour), nil, ""), "", ""},
		{"format scheme", &Authenticator{Keys: keys, Scheme: FormatOnly, Window: DefaultWindow, Now: a.Now},
			env("k1", A, now, nil, strings.Repeat("0", 32)), "", ""},
		{"off scheme", &Authenticator{Keys: keys, Scheme: Off, Window: DefaultWindow, Now: a.Now},
			env("k1", A, now, nil, strings.Repeat("0", 32)), "", ""},
		{"off scheme still checks the key", &Authenticator{Keys: keys, Scheme: Off, Window: DefaultWindow, Now: a.Now},
			env("k2", A, now, nil, ""), device.CodeAccountMismatch, device.FieldAccount},
	}
	tokyo := time.FixedZone("JST", 9*3600)
	aTokyo := &Authenticator{Keys: keys, Window: DefaultWindow, Location: tokyo, Now: a.Now}
	cases = append(cases, checkCase{"timestamp in the fleet's zone", aTokyo, env("k1", A, now, tokyo, ""), "", ""},
		checkCase{"UTC timestamp for a zoned fleet", aTokyo, env("k1", A, now, nil, ""), device.CodeStaleTimestamp, device.FieldTimestamp},
	)
	for _, tc := range cases {
		err := tc.a.Check(tc.e)
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || err.Code != tc.code || err.Field != tc.field {
			t.Errorf("%s: %v, want %s (%s)", tc.name, err, tc.code, tc.field)
		}
	}
}
