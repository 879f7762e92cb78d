package oracle

import (
	"go/ast"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// texts are the two texts, white space folded: a quote is found in them
// whatever their line breaks.
func texts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, path := range map[string]string{"published": "../../docs/gateway-api.md", "CONTRACT": "../../docs/CONTRACT.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = fold(string(b))
	}
	return out
}

func fold(s string) string { return strings.Join(strings.Fields(s), " ") }

// quoted checks that q is a passage of the text Texts names for it.
func quoted(t *testing.T, tx map[string]string, where, q string) {
	t.Helper()
	if q == "" {
		t.Errorf("%s: a refusal without the sentence that forbids it", where)
		return
	}
	if !strings.Contains(tx[Texts(q)], fold(q)) {
		t.Errorf("%s: %q is not a passage of the %s text", where, q, Texts(q))
	}
}

// TestEveryRefusalQuotesItsSentence: every refused sample of the rule
// table (each field's edges, forms and broken forms) carries the sentence
// of the published interface or the CONTRACT that forbids it, and each
// such sentence is really in that text. A form no sentence forbids is
// Open, never refused.
func TestEveryRefusalQuotesItsSentence(t *testing.T) {
	tx := texts(t)
	refused := 0
	for _, fb := range allFields() {
		f := fb.f
		for _, s := range append(append(f.Edges(), f.Forms(fb.base)...), f.Broken(fb.base)...) {
			if s.Verdict.OK {
				continue
			}
			refused++
			quoted(t, tx, f.Name+" "+s.Slug, s.Verdict.Quote)
		}
		for _, s := range f.OpenForms(fb.base) {
			if !s.Verdict.Open || s.Verdict.Quote != "" {
				t.Errorf("%s %s: an open form with a verdict %+v", f.Name, s.Slug, s.Verdict)
			}
		}
	}
	if refused < 200 {
		t.Errorf("only %d refused samples", refused)
	}
	// Every quote the table has is a passage of its text.
	fset := token.NewFileSet()
	for _, file := range parseDir(t, fset, ".") {
		for _, decl := range file.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Quote") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						t.Errorf("%s is not a string literal", n.Name)
						continue
					}
					q, _ := strconv.Unquote(lit.Value)
					quoted(t, tx, n.Name, q)
				}
			}
		}
	}
	// And a request's verdict: the refusals of Judge beyond one field.
	env := []Sent{{"api_key", Str("k")}, {"timestamp", Str("20260101120000")}, {"sign", Str(Sign.Example)},
		{"myservice_id", Str(Account.Example)}, {"mac", Str(MAC.Example)}}
	for _, c := range []struct {
		op     device.Operation
		fields []Sent
	}{
		{device.SendMessage, env[1:]},
		{device.SendCommand, env},
		{device.SendCommand, append(env[:5:5], Sent{"type", Str("Light Dimmer")})},
		{device.SendCommand, append(env[:5:5], Sent{"type", Str("Light Dimmer")}, Sent{"sn", Str(SN.Example)})},
		{device.SendCommand, append(env[:5:5], Sent{"type", Str("Light Dimmer")}, Sent{"sn", Str(SN.Example)}, Sent{"io", Str("On")})},
		{device.SendCommand, append(env[:5:5], Sent{"type", Str("Light Dimmer")}, Sent{"sn", Str(SN.Example)},
			Sent{"device_id", Str(strings.Repeat("a", 32))}, Sent{"dimming", Str("5")})},
		{device.UpdateName, append(env[:5:5], Sent{"sn", Str(SN.Example)})},
		{device.SendMessage, append(env[:5:5], Sent{"message_type", Str("message")})},
	} {
		v := Judge(c.op, device.XML, c.fields)
		if v.OK || v.Open {
			t.Errorf("%s %v: %+v, want a refusal", c.op, c.fields, v)
			continue
		}
		quoted(t, tx, c.op.Name()+" "+v.Why, v.Quote)
	}
}

// TestOpenFormsAreProbedNeverFailed: each field has its open forms in the
// table (so the harness probes them and gwsim --open-forms accept reads
// them the other way), and the readings the texts fix are not open: a
// JSON number in any syntax is a number, and a value outside a published
// list (an enumerated word or a type name with white space around it, a
// type name in another letter case) is refused.
func TestOpenFormsAreProbedNeverFailed(t *testing.T) {
	want := map[string][]string{
		"dimming":       {"plus-sign", "leading-zeros", "zero-fraction", "exponent", "leading-space", "hex", "fullwidth-digits"},
		"cooling_point": {"plus-sign", "leading-zeros", "exponent", "comma", "point-first", "point-last", "leading-space"},
		"timestamp":     {"second-60"},
		"format":        {"upper-case"},
		"message_value": {"plus-sign", "leading-zeros", "exponent", "hex-number", "trailing-space"},
		"message_type":  {"colon"},
		"opt":           {"padded", "control-character"},
	}
	got := map[string]map[string]bool{}
	for _, fb := range allFields() {
		for _, s := range fb.f.OpenForms(fb.base) {
			if got[fb.f.Name] == nil {
				got[fb.f.Name] = map[string]bool{}
			}
			got[fb.f.Name][s.Slug] = true
		}
		for _, s := range fb.f.Forms(fb.base) {
			if strings.HasPrefix(s.Slug, "json-number") && (!s.Verdict.OK || s.Verdict.Must) {
				t.Errorf("%s %s %s: %+v, want valid by CONTRACT 2 (SHOULD)", fb.f.Name, s.Slug, s.Value.Raw, s.Verdict)
			}
		}
	}
	for name, slugs := range want {
		for _, s := range slugs {
			if !got[name][s] {
				t.Errorf("%s: %s is not among its open forms %v", name, s, got[name])
			}
		}
	}
	for _, name := range []string{"mode", "fan", "io", "type"} {
		if len(got[name]) > 0 {
			t.Errorf("%s: %v are open, but a value outside its published list is refused", name, got[name])
		}
	}
}
