package oracle

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// validMessage is a send message body as gwconform writes it.
const validMessage = `{"control":{"api_key":"demo-key","timestamp":"20261128070000","sign":"0123456789abcdef0123456789abcdef",` +
	`"myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","message_type":"message","message_value":"brightness=80"}}`

const validMessageXML = XMLDeclaration + `<xml><control><api_key>demo-key</api_key><timestamp>20261128070000</timestamp>` +
	`<sign>0123456789abcdef0123456789abcdef</sign><myservice_id>5f3a9c0e1b2d4f6a8c0e1b2d</myservice_id><mac>a4c138f0e2b1</mac>` +
	`<message_type>message</message_type><message_value>brightness=80</message_value></control></xml>`

// TestGeneratedFormsQuoteTheirSentence: every generated refusal carries
// a sentence of the two texts, and a MUST that is no sentence's letter
// says its inference; every Open form says why; slugs are unique.
func TestGeneratedFormsQuoteTheirSentence(t *testing.T) {
	tx := texts(t)
	families := map[string][]NearMiss{
		"json-number": JSONNumberNearMisses(51), "json-text": JSONTextNearMisses(), "xml-document": XMLDocumentNearMisses(),
		"http-method": MethodNearMisses(), "http-path": PathNearMisses("/v1/services/gateway/command"), "sign-inputs": SignInputForms(),
	}
	for name, ms := range families {
		seen := map[string]bool{}
		for _, m := range ms {
			where := name + " " + m.Slug
			if seen[m.Slug] {
				t.Errorf("%s: slug twice", where)
			}
			seen[m.Slug] = true
			switch {
			case m.Verdict.Open:
				if m.Verdict.Why == "" {
					t.Errorf("%s: open without saying why", where)
				}
			case !m.Verdict.OK:
				quoted(t, tx, where, m.Verdict.Quote)
				if m.Verdict.Must && Texts(m.Verdict.Quote) != "published" {
					t.Errorf("%s: MUST on a CONTRACT sentence", where)
				}
				if m.Verdict.Must && m.Inference == "" {
					t.Errorf("%s: a MUST from a grammar the published text only names, without its inference", where)
				}
			}
		}
	}
	v, inf := SignPositionVerdict()
	quoted(t, tx, "sign position", v.Quote)
	if !v.Must || inf == "" {
		t.Errorf("sign position: %+v %q", v, inf)
	}
}

// TestJSONFormsAgreeWithRFC8259: every number near miss is no JSON as a
// member's value, and every JSON text form is JSON exactly when the
// oracle says it is refused as no JSON (Go's reader implements RFC 8259).
func TestJSONFormsAgreeWithRFC8259(t *testing.T) {
	for _, m := range JSONNumberNearMisses(51) {
		if json.Valid([]byte(`{"control":{"dimming":` + m.Text + `}}`)) {
			t.Errorf("number %s (%q) is JSON", m.Slug, m.Text)
		}
	}
	for _, m := range JSONTextNearMisses() {
		b := m.Edit(validMessage)
		if b == validMessage {
			t.Errorf("%s changes nothing", m.Slug)
		}
		if m.Verdict.Open {
			continue
		}
		if got := json.Valid([]byte(b)); got != m.Verdict.OK {
			t.Errorf("%s: JSON %v, oracle OK %v: %q", m.Slug, got, m.Verdict.OK, b)
		}
	}
	for _, m := range XMLDocumentNearMisses() {
		if m.Edit(validMessageXML) == validMessageXML {
			t.Errorf("%s changes nothing", m.Slug)
		}
	}
}

// TestSignForms: 15 sequences of the inputs and 4 separators, none the
// scheme's; the MUST ones are those without the secret.
func TestSignForms(t *testing.T) {
	ms := SignInputForms()
	if len(ms) != 15+4 {
		t.Fatalf("%d sign forms", len(ms))
	}
	signs := map[string]bool{SignOf(SignTemplate, "k", "s", "t"): true}
	for _, m := range ms {
		s := SignOf(m.Text, "k", "s", "t")
		if signs[s] {
			t.Errorf("%s: the same sign as another form or the right one", m.Slug)
		}
		signs[s] = true
		if m.Verdict.Must == strings.Contains(m.Text, "{secret}") {
			t.Errorf("%s: MUST %v", m.Slug, m.Verdict.Must)
		}
	}
}

// TestPositionChanges: one change per position, to another digit, not
// another letter case of the same one.
func TestPositionChanges(t *testing.T) {
	v := "0123456789abcdefABCDEF0123456789"
	for seed := int64(0); seed < 20; seed++ {
		cs := PositionChanges(v, rand.New(rand.NewSource(seed)))
		if len(cs) != len(v) {
			t.Fatalf("%d changes", len(cs))
		}
		for i, c := range cs {
			if !strings.EqualFold(c.Text[:i]+c.Text[i+1:], v[:i]+v[i+1:]) || strings.EqualFold(c.Text[i:i+1], v[i:i+1]) {
				t.Errorf("seed %d position %d: %q", seed, i, c.Text)
			}
		}
	}
}
