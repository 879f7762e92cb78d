package auth

import (
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// BenchmarkSign is the md5 sign of CONTRACT 1, as a client computes it.
func BenchmarkSign(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Sign("demo-key", "demo-secret", "20240501120000")
	}
}

// BenchmarkCheck is authenticating one request: key, account, timestamp
// window and sign.
func BenchmarkCheck(b *testing.B) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	a := &Authenticator{Keys: map[string]Key{"demo-key": {Secret: "demo-secret", AccountID: "5f3a9c0e1b2d4f6a8c0e1b2d"}},
		Scheme: MD5, Window: DefaultWindow, Now: func() time.Time { return now }}
	ts := Timestamp(now, nil)
	e := &device.Envelope{APIKey: "demo-key", Timestamp: ts, Time: now, Sign: Sign("demo-key", "demo-secret", ts),
		AccountID: "5f3a9c0e1b2d4f6a8c0e1b2d", MAC: "a4c138f0e2b1"}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Check(e); err != nil {
			b.Fatal(err)
		}
	}
}
