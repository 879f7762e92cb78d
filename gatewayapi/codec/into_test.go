package codec

import (
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// DecodeInto gives what Decode gives; when a fast reader takes the body
// (the first of each format) the pairs are in dst's storage; and the
// pairs do not change when the body's buffer is reused afterwards.
func TestDecodeInto(t *testing.T) {
	bodies := map[device.Format][]string{
		device.JSON: {`{"control":{"api_key":"k","sn":"abc","dimming":50}}`, `{"control":{"name":"a\u00e9"}}`, `{"control":`},
		device.XML:  {`<xml><control><api_key>k</api_key><sn>abc</sn></control></xml>`, `<xml><control><name>a&amp;b</name></control></xml>`, `<xml>`},
	}
	for format, list := range bodies {
		for i, text := range list {
			want, werr := Decode(format, []byte(text))
			dst := make([]device.Pair, 3, 16)
			body := []byte(text)
			got, err := DecodeInto(format, body, dst)
			if (err == nil) != (werr == nil) || pairsText(got) != pairsText(want) {
				t.Errorf("%s: %s %v, want %s %v", text, pairsText(got), err, pairsText(want), werr)
				continue
			}
			if err != nil {
				continue
			}
			if shared := &got[:1][0] == &dst[:1][0]; shared != (i == 0) {
				t.Errorf("%s: pairs in dst's storage: %v", text, shared)
			}
			before := pairsText(got)
			for j := range body {
				body[j] = 'x'
			}
			if pairsText(got) != before {
				t.Errorf("%s: the pairs changed with the body's buffer: %s, was %s", text, pairsText(got), before)
			}
		}
	}
}
