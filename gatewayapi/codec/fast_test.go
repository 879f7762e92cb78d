package codec

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/fixtures"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The bodies clients send, the published examples among them, take the
// fast readers; the standard readers are for the odd ones. Without this a
// change could send every request down the slow path unnoticed.
func TestFastReadersTakeTheExamples(t *testing.T) {
	fill := strings.NewReplacer("<API_KEY>", "demo-key", "<TIMESTAMP>", "20240501120000",
		"<SIGNATURE>", "0123456789abcdef0123456789abcdef", "<ACCOUNT_ID>", "5f3a9c0e1b2d4f6a8c0e1b2d",
		"<GATEWAY_MAC>", "a4c138f0e2b1", "<DEVICE_SN>", "0123456789abcdef0123456789abcd04")
	n := 0
	fs.WalkDir(fixtures.Examples, "examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") {
			return err
		}
		raw, _ := fixtures.Examples.ReadFile(path)
		body := []byte(fill.Replace(string(raw)))
		var ok bool
		var fast, slow []device.Pair
		var derr *device.Error
		if strings.HasSuffix(path, ".xml") {
			fast, ok = fastXML(body)
			slow, derr = decodeXML(body, device.RefuseOpen)
		} else {
			fast, ok = fastJSON(body)
			slow, derr = decodeJSON(body)
		}
		if !ok || derr != nil || pairsText(fast) != pairsText(slow) {
			t.Errorf("%s: fast %v %s, standard %v %s", path, ok, pairsText(fast), derr, pairsText(slow))
		}
		n++
		return nil
	})
	if n < 10 {
		t.Errorf("%d examples", n)
	}
}

// What the fast readers give up on, the standard ones decide.
func TestFastReadersGiveUp(t *testing.T) {
	for _, body := range []string{
		`{"control":{"a":"\u00e9"}}`, `{"control":{"a":1}} x`, `{"other":{}}`, `{"control":{"a":{}}}`, `{"control":{"a":01}}`,
		`{"control":{"a":1.}}`, `{"control":{"a":-}}`, `{"control":{"a":tru}}`, `{"control":{"a":"x"`, `[]`,
	} {
		if _, ok := fastJSON([]byte(body)); ok {
			t.Errorf("fastJSON took %s", body)
		}
	}
	for _, body := range []string{
		`<xml><control><a>&amp;</a></control></xml>`, `<xml><control><a x="1">v</a></control></xml>`,
		`<xml><control><a>v</b></control></xml>`, `<xml><control><!-- c --></control></xml>`, `<xml><control><a>]]></a></control></xml>`,
		`<xml><control><a>x` + "\r" + `</a></control></xml>`, `<xml><control><ns:a>v</ns:a></control></xml>`, `<?xml version="1.1"?><xml><control></control></xml>`,
		`<xml><control><a><![CDATA[x]]></a></control></xml>`, `<xml><control/></xml>`, `<xml><control></control></xml><xml/>`,
		`<xml><control><a>` + "\x01" + `</a></control></xml>`, `<!DOCTYPE x><xml><control></control></xml>`,
	} {
		if _, ok := fastXML([]byte(body)); ok {
			t.Errorf("fastXML took %s", body)
		}
	}
	for _, body := range []string{`{"control":{"a":"x","n":-1.5e+3,"t":true,"f":false,"z":null}}`, ` { "control" : { } } `} {
		if _, ok := fastJSON([]byte(body)); !ok {
			t.Errorf("fastJSON gave up on %s", body)
		}
	}
}

// TestPlain8AgreesWithJSONPlain holds the eight-byte test of jsonString to
// the byte table: every byte in every place among plain bytes, and words
// of random bytes, which put several stop bytes side by side.
func TestPlain8AgreesWithJSONPlain(t *testing.T) {
	byTable := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if !jsonPlain[s[i]] {
				return false
			}
		}
		return true
	}
	for _, fill := range []byte{'a', 0x20, 0xFF, 0x80, '!'} {
		for c := 0; c < 256; c++ {
			for k := 0; k < 8; k++ {
				b := bytes.Repeat([]byte{fill}, 8)
				b[k] = byte(c)
				if got, want := plain8(le64(string(b))), byTable(string(b)); got != want {
					t.Fatalf("plain8(% x) = %v, the table says %v", b, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0, 0x1F, 0x20, 0x21, '"', 0x23, '\\', 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF, 'a'}
	for range 200000 {
		var b [8]byte
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if got, want := plain8(le64(string(b[:]))), byTable(string(b[:])); got != want {
			t.Fatalf("plain8(% x) = %v, the table says %v", b, got, want)
		}
	}
}
