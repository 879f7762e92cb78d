package conformance

import (
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// TestBodyFormsChangeTheBody: every body form rewrites the valid body of a
// message as the client encodes it (a form that leaves it as it was would
// check nothing), and no two forms write the same body.
func TestBodyFormsChangeTheBody(t *testing.T) {
	fields := []client.Field{{Key: "api_key", Value: "demo-key"}, {Key: "timestamp", Value: "20260101120000"},
		{Key: "sign", Value: "0123456789abcdef0123456789abcdef"}, {Key: "myservice_id", Value: "5f3a9c0e1b2d4f6a8c0e1b2d"},
		{Key: "mac", Value: "a4c138f0e2b1"}, {Key: "message_type", Value: "message"}, {Key: "message_value", Value: "brightness=80"}}
	seen := map[string]string{}
	for _, b := range bodyForms() {
		valid, err := client.Encode(b.format, fields)
		if err != nil {
			t.Fatal(err)
		}
		got := b.body(string(valid))
		if got == string(valid) {
			t.Errorf("%s %s leaves the body as it was: %s", b.format, b.slug, got)
		}
		if other, dup := seen[b.format.String()+got]; dup {
			t.Errorf("%s %s writes the same body as %s", b.format, b.slug, other)
		}
		seen[b.format.String()+got] = b.slug
	}
}
