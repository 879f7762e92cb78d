package catalog

import (
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestRetryRenewsOnlyTheEnvelopesTimestamp: a retry's attempt writes the
// timestamp again where the envelope has it, and nowhere else: a check
// that dropped the timestamp, renamed its key or set it by hand sends
// what it meant to, and a wrong sign or a body sent as bytes is not
// renewed at all.
func TestRetryRenewsOnlyTheEnvelopesTimestamp(t *testing.T) {
	mk := func() Call {
		c := Call{Op: device.SendMessage, Fields: []Field{{Name: device.FieldAPIKey, Value: "k"}, {Name: device.FieldTimestamp, Value: "20260101000000"},
			{Name: device.FieldSign, Value: "x"}}}
		c.Stamp = func() string { return "20260101000009" }
		return c
	}
	ts := func(c Call) string {
		r := c.Request(device.JSON)
		if r.Renew == nil {
			return "not renewed"
		}
		for _, f := range r.Renew() {
			if f.Key == device.FieldTimestamp {
				return f.Value.(string)
			}
		}
		return "none"
	}
	plain := mk()
	dropped := mk()
	dropped.Drop(device.FieldTimestamp)
	byHand := mk()
	byHand.Set(device.FieldTimestamp, "2026010100000")
	renamed := mk()
	renamed.Fields[1].Wire = "Timestamp"
	wrongSign := mk()
	wrongSign.KeepSign = true
	raw := mk()
	raw.Raw = func(device.Format) []byte { return []byte("{") }
	for name, c := range map[string]struct {
		c    Call
		want string
	}{
		"plain": {plain, "20260101000009"}, "dropped": {dropped, "not renewed"}, "set by hand": {byHand, "not renewed"},
		"renamed": {renamed, "none"}, "wrong sign": {wrongSign, "not renewed"}, "raw": {raw, "not renewed"},
	} {
		if got := ts(c.c); got != c.want {
			t.Errorf("%s: the retry's timestamp is %q, want %q", name, got, c.want)
		}
	}
	if v := plain.Request(device.JSON).Fields[1].Value; v != "20260101000000" {
		t.Errorf("the first attempt's timestamp changed: %v", v)
	}
}
