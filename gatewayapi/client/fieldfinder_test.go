package client

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// fieldPattern is the regular expression fieldFinder stands for: the
// oracle of its tests.
func fieldPattern(name string) *regexp.Regexp {
	q := regexp.QuoteMeta(name)
	return regexp.MustCompile(`("` + q + `"\s*:\s*)"((?:[^"\\]|\\.)*)"|(<` + q + `>)([^<]*)</` + q + `>`)
}

// sameAsPattern fails the test where the finder and the expression differ
// on body.
func sameAsPattern(t *testing.T, name, body string) {
	t.Helper()
	want := fieldPattern(name).FindAllStringSubmatchIndex(body, -1)
	got := fieldValue(name).FindAllStringSubmatchIndex(body, -1)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("field %q in %q:\n finder     %v\n expression %v", name, body, got, want)
	}
	if g, w := fieldValue(name).MatchString(body), fieldPattern(name).MatchString(body); g != w {
		t.Fatalf("field %q in %q: MatchString %v, the expression %v", name, body, g, w)
	}
}

var fieldFinderSeeds = []string{
	``, `{}`, `"sign"`, `"sign":`, `"sign":"`, `"sign":"x"`, `"sign" :	"x"`, "\"sign\"\n:\r\n\"x\"",
	`{"control":{"api_key":"k","timestamp":"20240101000000","sign":"abc","sn":"1"}}`,
	`"sign":"a\"b"`, `"sign":"a\\"`, `"sign":"a\`, "\"sign\":\"a\\\nb\"", `"sign":"a\é"`, "\"sign\":\"a\\\xff\"",
	`"sign":"x","sign":"y"`, `"sign":"sign":"x"`, `""sign":"x"`, `"signs":"x"`, `"sign":x"y"`,
	`<sign>x</sign>`, `<sign></sign>`, `<sign>x<b>y</b></sign>`, `<sign>x</sig>`, `<sign>x</sign><sign>y</sign>`,
	`<control><api_key>k</api_key><sign>s</sign></control>`, `<sign>"sign":"x"</sign>`, `"sign":"<sign>x</sign>"`,
	"<sign>a\nb</sign>", `<sign>x`, `<<sign>x</sign>`, `"sign"<sign>x</sign>`,
}

func TestFieldFinderIsTheExpression(t *testing.T) {
	for _, name := range []string{"sign", "api_key", "timestamp"} {
		for _, body := range fieldFinderSeeds {
			sameAsPattern(t, name, body)
			sameAsPattern(t, name, strings.ReplaceAll(body, "sign", name))
		}
	}
	// Bodies drawn from the pieces the expression turns on, many times.
	pieces := []string{`"`, `\`, `:`, ` `, "\n", "\t", `<`, `>`, `/`, `sign`, `"sign"`, `<sign>`, `</sign>`, `x`, `é`, "\xff", `{`, `}`, `,`}
	r := rand.New(rand.NewPCG(40, 1))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(14) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		sameAsPattern(t, "sign", b.String())
	}
}

func FuzzFieldFinder(f *testing.F) {
	for _, s := range fieldFinderSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) { sameAsPattern(t, "sign", body) })
}

var benchBody = `{"control":{"api_key":"key-d12759667cd4015d","timestamp":"20240101000000","sign":"9efad6d8b79516681b579ac9ff981c6b","myservice_id":"25dfcf70122856d4f461f3f5","mac":"974e6df06286","sn":"b92fbf629c10ffa553c4ed6170ee9284","type":"Light Dimmer","dimming":"50"}}`

// BenchmarkMaskAndRedact is what the suite does to each exchange it
// records: the request's api_key masked and its sign redacted.
func BenchmarkMaskAndRedact(b *testing.B) {
	b.Run("finder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			RedactSign(MaskAPIKeys(benchBody))
		}
	})
	b.Run("expression", func(b *testing.B) {
		sign, key := fieldPattern("sign"), fieldPattern("api_key")
		b.ReportAllocs()
		for b.Loop() {
			sign.FindAllStringSubmatchIndex(benchBody, -1)
			key.FindAllStringSubmatchIndex(benchBody, -1)
		}
	})
}
