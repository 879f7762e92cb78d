package device

import "testing"

// benchPairs is a thermostat command as the codec hands it over.
func benchPairs(format Format) []Pair {
	cool, heat := "cooling point", "heating point"
	if format == XML {
		cool, heat = "cooling_point", "heating_point"
	}
	return []Pair{
		{FieldAPIKey, Str("demo-key")},
		{FieldTimestamp, Str("20240501120000")},
		{FieldSign, Str("0123456789abcdef0123456789abcdef")},
		{FieldAccount, Str("5f3a9c0e1b2d4f6a8c0e1b2d")},
		{FieldMAC, Str("a4c138f0e2b1")},
		{FieldSN, Str("0123456789abcdef0123456789abcd04")},
		{FieldType, Str("Thermostat")},
		{"mode", Str("auto")},
		{cool, Str("26.5")},
		{heat, Str("20")},
		{"fan", Str("Auto")},
	}
}

// BenchmarkParse is the validation of a thermostat command, the largest
// published request: envelope, type, fields and values.
func BenchmarkParse(b *testing.B) {
	for _, f := range []Format{JSON, XML} {
		b.Run(f.String(), func(b *testing.B) {
			pairs := benchPairs(f)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(SendCommand, f, pairs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
