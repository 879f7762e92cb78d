package codec

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/fixtures"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// benchBody is a published example with its placeholders filled in.
func benchBody(b *testing.B, name string) []byte {
	b.Helper()
	raw, err := fixtures.Examples.ReadFile("examples/" + name)
	if err != nil {
		b.Fatal(err)
	}
	return []byte(strings.NewReplacer("<API_KEY>", "demo-key", "<TIMESTAMP>", "20240501120000",
		"<SIGNATURE>", "0123456789abcdef0123456789abcdef", "<ACCOUNT_ID>", "5f3a9c0e1b2d4f6a8c0e1b2d",
		"<GATEWAY_MAC>", "a4c138f0e2b1", "<DEVICE_SN>", "0123456789abcdef0123456789abcd04").Replace(string(raw)))
}

// BenchmarkDecode reads the control fields of a thermostat command, the
// largest published request, as gwsim does (the fast readers of fast.go).
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		name   string
		format device.Format
		file   string
	}{{"json", device.JSON, "command-thermostat.json"}, {"xml", device.XML, "command-thermostat.xml"}} {
		b.Run(c.name, func(b *testing.B) {
			body := benchBody(b, c.file)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(c.format, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeStandard is the same with the encoding/json and
// encoding/xml readers, which gwsim uses only for bodies the fast readers
// give up on: the gain of fast.go.
func BenchmarkDecodeStandard(b *testing.B) {
	for _, c := range []struct {
		name string
		dec  func([]byte) ([]device.Pair, *device.Error)
		file string
	}{{"json", decodeJSON, "command-thermostat.json"}, {"xml", func(b []byte) ([]device.Pair, *device.Error) { return decodeXML(b, device.RefuseOpen) }, "command-thermostat.xml"}} {
		b.Run(c.name, func(b *testing.B) {
			body := benchBody(b, c.file)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.dec(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkErrorBody is writing a rejection.
func BenchmarkErrorBody(b *testing.B) {
	e := device.Errorf(device.CodeInvalidField, "dimming", "dimming must be an integer from 1 to 100, not %q", "101")
	for _, f := range []device.Format{device.JSON, device.XML} {
		b.Run(f.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Error(f, e)
			}
		})
	}
}
