package device

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"time"
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

// numberTexts are number literals around every numeric field's bounds and
// in every form the two paths of parse tell apart, plus random ones.
func numberTexts() []string {
	texts := []string{"0", "-0", "0.0", "-0.0", "00", "01", "1", "5.0", "5.5", "26.5", "-50", "-50.0", "-50.000000000001",
		"-49.99999999999999", "100", "100.0", "100.00000000000001", "100.0000000000001", "99.99999999999999",
		"99.999999999999999999", "4", "4.0", "4.00000000000001", "1.0", "0.99999999999999", "0.1", "0.3", "-0.7", "0.30", "123456789012.5", "101", "-51", "1e2", "1E0",
		"1.5e1", "-0e5", "999999999999999", "9999999999999999", "0.000000000000001", "1.", ".5", "+1", " 1", "1 ",
		"12345678901234.5", "1234567890123.45", "-1234567890.12345", "50.00", "50.10", "3.000", "3.0001"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789-.e+"
	for range 6000 {
		var b []byte
		switch r.IntN(3) {
		case 0: // any characters
			for range 1 + r.IntN(20) {
				b = append(b, alphabet[r.IntN(len(alphabet))])
			}
		default: // -?digits[.digits] of any lengths
			if r.IntN(3) == 0 {
				b = append(b, '-')
			}
			for range 1 + r.IntN(4) {
				b = append(b, byte('0'+r.IntN(10)))
			}
			if r.IntN(2) == 0 {
				b = append(b, '.')
				for range 1 + r.IntN(16) {
					b = append(b, byte('0'+r.IntN(10)))
				}
			}
		}
		texts = append(texts, string(b))
	}
	return texts
}

// The fast path decides only what the exact path decides the same way:
// for every numeric field, literal, kind and open-forms mode, a value
// fastNumber takes is one exactNumber accepts, with the same float64.
func TestFastNumberAgreesWithExact(t *testing.T) {
	decided := 0
	// Bounds no float64 holds exactly (0.1, 0.3, -0.7), where a literal
	// rounds onto a bound it is not equal to, beside the real types.
	odd := &Type{Name: "odd", Fields: []Field{
		{Name: "a", Kind: Decimal, Min: 0.1, Max: 0.3, Rule: "a"},
		{Name: "b", Kind: Decimal, Min: -0.7, Max: 123456789012.5, Rule: "b"},
		{Name: "c", Kind: Integer, Min: -3, Max: 999999999999999, Rule: "c"},
	}}
	for _, typ := range append(slices.Clone(Types), odd) {
		for i := range typ.Fields {
			f := &typ.Fields[i]
			if f.Kind != Integer && f.Kind != Decimal {
				continue
			}
			for _, text := range numberTexts() {
				for _, kind := range []ValueKind{Number, String} {
					v := Value{Text: text, Kind: kind}
					for _, open := range []OpenForms{RefuseOpen, AcceptOpen} {
						got, gerr := f.parse(i, v, f.Name, open)
						want, werr := f.exactNumber(Setting{Index: i}, v, f.Name, open)
						if (gerr == nil) != (werr == nil) || math.Float64bits(got.Num) != math.Float64bits(want.Num) ||
							gerr != nil && gerr.Message != werr.Message {
							t.Fatalf("%s.%s %v %q (%v): parse = %v, %v; exact = %v, %v", typ.Name, f.Name, kind, text, open, got.Num, gerr, want.Num, werr)
						}
						if _, ok := fastNumber(f, v, text); ok {
							decided++
						}
					}
				}
			}
		}
	}
	if decided == 0 {
		t.Fatal("the fast path decided nothing")
	}
	t.Logf("%d verdicts taken by the fast path", decided)
}

// timestampTime gives time.Parse's verdict and time on every 14-digit
// timestamp around the calendar's edges, and the second after :59 for a
// second of 60 that is otherwise real (the open reading's leap second).
func TestTimestampTimeAgreesWithTimeParse(t *testing.T) {
	check := func(s string) {
		t.Helper()
		got, ok, sec60 := timestampTime(s)
		want, err := time.Parse(TimestampLayout, s)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("timestampTime(%q) = %v, %v; time.Parse = %v, %v", s, got, ok, want, err)
		}
		w59, err59 := time.Parse(TimestampLayout, s[:12]+"59")
		if wantSec60 := s[12:] == "60" && err59 == nil; sec60 != wantSec60 || sec60 && got != w59.Add(time.Second) {
			t.Fatalf("timestampTime(%q) = %v, sec60 %v; the second after %v wanted: %v", s, got, sec60, w59, wantSec60)
		}
	}
	for _, y := range []string{"0000", "0001", "0004", "0100", "0400", "1900", "1999", "2000", "2023", "2024", "2100", "9999"} {
		for mo := 0; mo <= 13; mo++ {
			for d := 0; d <= 32; d++ {
				for _, hms := range []string{"000000", "235959", "240000", "236000", "235960", "235961", "120060", "995999", "000099"} {
					check(fmt.Sprintf("%s%02d%02d%s", y, mo, d, hms))
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, 14)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		check(string(b))
	}
}

// hexLen is HexLen, and hexDigits tells hexadecimal text and its upper
// case as the definitions say.
func TestHexLengthsAndDigits(t *testing.T) {
	for name, n := range HexLen {
		if got := hexLen(name); got != n {
			t.Errorf("hexLen(%q) = %d, want %d", name, got, n)
		}
	}
	hexRe, upperRe := regexp.MustCompile(`^[0-9a-fA-F]*$`), regexp.MustCompile(`[A-F]`)
	texts := []string{"", "0", "af", "AF", "aF", "g", "0x1", "a4c138f0e2b1", "A4C138F0E2B1", "a4c138f0e2bG", " a4", "é"}
	for c := range 256 {
		texts = append(texts, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"F")
	}
	for _, s := range texts {
		hex, upper := hexDigits(s)
		if hex != hexRe.MatchString(s) || hex && upper != upperRe.MatchString(s) {
			t.Errorf("hexDigits(%q) = %v, %v", s, hex, upper)
		}
	}
}

// slotOf numbers the envelope's fields in EnvelopeFields' order, then the
// other names it knows, each once, and nothing else.
func TestSlotOf(t *testing.T) {
	for i, name := range EnvelopeFields {
		if got := slotOf(name); got != i {
			t.Errorf("slotOf(%q) = %d, want %d", name, got, i)
		}
	}
	seen := map[int]string{}
	for _, name := range []string{FieldAPIKey, FieldTimestamp, FieldSign, FieldAccount, FieldMAC, FieldFormat, FieldSN, FieldDeviceID, FieldType} {
		k := slotOf(name)
		if k < 0 || k >= numSlots || seen[k] != "" {
			t.Errorf("slotOf(%q) = %d (taken by %q)", name, k, seen[k])
		}
		seen[k] = name
	}
	for _, name := range []string{"", "API_KEY", "api_key ", "dimming", "name", "message_type", "cooling point"} {
		if k := slotOf(name); k != -1 {
			t.Errorf("slotOf(%q) = %d, want -1", name, k)
		}
	}
}
