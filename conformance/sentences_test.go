package conformance

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/docs"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// unstated lists what is wrong with an expectation's parts in format f:
// a part judged without a sentence of the CONTRACT that is really in it
// and states that part. A part no sentence states must be Info.
func unstated(w catalog.Expectation, f device.Format, contract string) []string {
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	var bad []string
	for _, p := range w.Parts(f) {
		if p.Info() {
			continue
		}
		in := true
		for _, q := range p.Said {
			if !strings.Contains(contract, fold(q)) {
				bad = append(bad, fmt.Sprintf("%s %s rests on %q, which is not a passage of CONTRACT.md", p.What, p.Want, q))
				in = false
			}
		}
		if !in {
			continue
		}
		said := strings.Join(p.Said, " ")
		var states bool
		switch p.What {
		case "status":
			states = regexp.MustCompile(`\b` + p.Want + `\b`).MatchString(said)
		case "code":
			states = true
			for _, c := range w.Codes {
				states = states && strings.Contains(said, "`"+c+"`")
			}
		case "field":
			states = false
			for _, c := range w.Codes {
				states = states || strings.Contains(said, `"code":"`+c+`","field":"`+p.Want+`"`)
			}
		case "Allow":
			states = strings.Contains(said, "`Allow: POST`")
		case "format":
			states = said == catalog.SaidErrors
		}
		if !states {
			bad = append(bad, fmt.Sprintf("%s %s is judged, but its sentence %q does not state it", p.What, p.Want, p.Said))
		}
	}
	return bad
}

// TestEveryExpectationHasItsSentence walks the whole catalog: every part
// of every refusal's answer a check judges (status, code, field, header,
// format) rests on a sentence of the CONTRACT that states it, and every
// SHOULD check of that answer quotes its sentences and says which parts it
// reports without judging. The published interface shows no status or
// error code (its section 7): no MUST check judges one.
func TestEveryExpectationHasItsSentence(t *testing.T) {
	contract := strings.Join(strings.Fields(string(docs.Contract)), " ")
	all := Checks()
	cases := 0
	for _, c := range catalog.Cases() {
		if c.Want.OK || c.Want.ContractOK {
			continue
		}
		cases++
		for _, f := range c.InFormats() {
			for _, b := range unstated(c.Want, f, contract) {
				t.Errorf("%s.%s: %s", c.ID, f, b)
			}
			id := c.ID + "." + f.String() + ".contract"
			m, ok := Catalog().Lookup(id)
			if !ok {
				t.Errorf("%s: no check", id)
				continue
			}
			for _, p := range c.Want.Parts(f) {
				for _, q := range p.Said {
					if p.What != "format" && !strings.Contains(m.Assertion, q) {
						t.Errorf("%s judges its %s without quoting %q", id, p.What, q)
					}
				}
				if p.Info() && !strings.Contains(m.Assertion, "reported, not judged") {
					t.Errorf("%s does not say that its %s is not judged", id, p.What)
				}
			}
		}
	}
	if cases < 900 {
		t.Fatalf("only %d refusal cases walked", cases)
	}
	answered := regexp.MustCompile(`SHOULD be answered ([1-5][0-9][0-9])`)
	quoted := regexp.MustCompile(`“[^”]*”`)
	for _, m := range all {
		if st := answered.FindStringSubmatch(m.Assertion); st != nil && st[1] != "200" {
			ok := false
			for _, q := range quoted.FindAllString(m.Assertion, -1) {
				ok = ok || regexp.MustCompile(`\b`+st[1]+`\b`).MatchString(q) && strings.Contains(contract, strings.Join(strings.Fields(strings.Trim(q, "“”")), " "))
			}
			if !ok {
				t.Errorf("%s judges the status %s without quoting the CONTRACT sentence that states it: %s", m.ID, st[1], m.Assertion)
			}
		}
		// HTTP's own rules are MUST by the RFC's keyword, and a status the
		// RFC names (100, 417) is the RFC's to state, not the interface's.
		if m.Level == check.Must && !strings.HasPrefix(m.ID, "http.") && regexp.MustCompile(`status code|answered [1-5][0-9][0-9]|with error |Allow:`).MatchString(m.Assertion) {
			t.Errorf("%s is MUST and judges what the published interface does not show: %s", m.ID, m.Assertion)
		}
	}
}

// TestUnstatedDetailsAreNotJudged: the details the CONTRACT does not state
// are reported, not judged, and those it states stay SHOULD.
func TestUnstatedDetailsAreNotJudged(t *testing.T) {
	parts := func(id string, f device.Format) map[string]catalog.Part {
		for _, c := range catalog.Cases() {
			if c.ID == id {
				out := map[string]catalog.Part{}
				for _, p := range c.Want.Parts(f) {
					out[p.What] = p
				}
				return out
			}
		}
		t.Fatalf("no case %s", id)
		return nil
	}
	for _, x := range []struct {
		id          string
		f           device.Format
		info, judge []string
	}{
		// CONTRACT 2: "Method other than POST: 405 with `Allow: POST`."
		{"command.method.get", device.JSON, []string{"code"}, []string{"status", "Allow", "format"}},
		// CONTRACT 3: "at least one field of its type": no field is named.
		{"command.light-dimmer.no-fields", device.XML, []string{"field"}, []string{"status", "code"}},
		// CONTRACT 2: "both present and different: 400."
		{"command.device_id.differs", device.JSON, []string{"code", "field"}, []string{"status"}},
		// No sentence says which name a thermostat point's error gives it.
		{"command.thermostat.cooling_point.above-by-a-tenth", device.JSON, []string{"field"}, []string{"status", "code"}},
		// CONTRACT 4's example: invalid_field on field dimming.
		{"command.light-dimmer.dimming.0", device.JSON, nil, []string{"status", "code", "field"}},
		// CONTRACT 1: "Unknown key: 401 `unknown_api_key`."
		{"command.envelope.api_key.unknown", device.XML, []string{"field"}, []string{"status", "code"}},
	} {
		ps := parts(x.id, x.f)
		for _, w := range x.info {
			if p, ok := ps[w]; !ok || !p.Info() {
				t.Errorf("%s: its %s is judged (%+v); no sentence states it", x.id, w, p)
			}
		}
		for _, w := range x.judge {
			if p, ok := ps[w]; !ok || p.Info() {
				t.Errorf("%s: its %s is not judged (%+v); a sentence states it", x.id, w, p)
			}
		}
	}
	// The walk finds a part judged on a sentence that does not state it,
	// or on one that is not in the CONTRACT.
	contract := strings.Join(strings.Fields(string(docs.Contract)), " ")
	bad := catalog.Expectation{Status: 422, Codes: []string{device.CodeInvalidField}, Said: []string{"Bad values: 422 `invalid_field`."}}
	if got := unstated(bad, device.JSON, contract); len(got) != 2 {
		t.Errorf("a sentence not in the CONTRACT passed the walk: %q", got)
	}
	wrong := catalog.Expectation{Status: 400, Codes: []string{device.CodeInvalidField}, Said: []string{catalog.SaidTypeMismatch, catalog.SaidValidation}}
	if got := unstated(wrong, device.JSON, contract); len(got) != 0 {
		t.Errorf("stated parts failed the walk: %q", got)
	}
}
