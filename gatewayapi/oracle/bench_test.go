package oracle

import (
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// BenchmarkJudgeExchange is what gwsim proxy spends judging one exchange:
// the request (structure and fields) and the answer, in each format.
func BenchmarkJudgeExchange(b *testing.B) {
	for _, tc := range []struct {
		name, ct, body, answer string
	}{
		{"json", "application/json", msgJSON, `{"status":"success"}`},
		{"xml", "application/xml", msgXML, `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req := Request{Method: "POST", ContentType: tc.ct, Body: []byte(tc.body)}
			a := Answer{Status: 200, ContentType: tc.ct, Body: []byte(tc.answer)}
			b.ReportAllocs()
			for b.Loop() {
				f, _, v := JudgeRequest(device.SendMessage, req)
				if len(JudgeAnswer(f, v, a)) != 0 || !v.OK {
					b.Fatal("judged wrong")
				}
			}
		})
	}
}
