package catalog

import (
	"slices"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
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

// TestBodyFormsAgreeWithTheRuleTable: the rule table (oracle.JudgeRequest)
// gives every body form the verdict its case expects (valid, or refused
// with one of the case's codes and the sentence that forbids it), and no
// case judges a body form the table calls open.
func TestBodyFormsAgreeWithTheRuleTable(t *testing.T) {
	fields := []client.Field{{Key: "api_key", Value: "demo-key"}, {Key: "timestamp", Value: "20260101120000"},
		{Key: "sign", Value: "0123456789abcdef0123456789abcdef"}, {Key: "myservice_id", Value: "5f3a9c0e1b2d4f6a8c0e1b2d"},
		{Key: "mac", Value: "a4c138f0e2b1"}, {Key: "message_type", Value: "message"}, {Key: "message_value", Value: "brightness=80"}}
	for _, b := range bodyForms() {
		valid, err := client.Encode(b.format, fields)
		if err != nil {
			t.Fatal(err)
		}
		body := b.body(string(valid))
		ct := map[device.Format]string{device.JSON: "application/json", device.XML: "application/xml"}[b.format]
		_, _, v := oracle.JudgeRequest(device.SendMessage, oracle.Request{Method: "POST", ContentType: ct, Body: []byte(body)})
		switch {
		case v.Open:
			t.Errorf("%s %s: the rule table calls it open (%s), but a case judges it", b.format, b.slug, v.Why)
		case b.valid != v.OK:
			t.Errorf("%s %s: valid %v, the rule table says %+v", b.format, b.slug, b.valid, v)
		case !v.OK && !slices.Contains(b.want.Codes, v.Code):
			t.Errorf("%s %s: the case expects %v, the rule table %s (%s)", b.format, b.slug, b.want.Codes, v.Code, v.Why)
		case !v.OK && v.Quote == "":
			t.Errorf("%s %s: the rule table refuses it without a sentence (%s)", b.format, b.slug, v.Why)
		}
	}
	for _, b := range oracle.OpenBodyForms() {
		valid, _ := client.Encode(b.Format, fields)
		ct := map[device.Format]string{device.JSON: "application/json", device.XML: "application/xml"}[b.Format]
		if _, _, v := oracle.JudgeRequest(device.SendMessage, oracle.Request{Method: "POST", ContentType: ct, Body: []byte(b.Edit(string(valid)))}); !v.Open {
			t.Errorf("open body form %s: %+v", b.Slug, v)
		}
	}
}
