package catalog

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// TestDecimalCasesNameTheFieldsRange: the cases beyond a Decimal field's
// range say that field's bounds and unit, not the thermostat's (a new
// type's power limit of 0 to 3680 W is not "below -50 °C").
func TestDecimalCasesNameTheFieldsRange(t *testing.T) {
	typ := &oracle.Type{Name: "Smart Plug", Fields: []oracle.Field{
		{Name: "power_limit", JSON: "power limit", Kind: oracle.Decimal, Min: 0, Max: 3680000, RangeMust: true, Unit: "W", Example: "2000", Section: "2.3"},
	}}
	titles := map[string]string{}
	for _, c := range fieldCases(typ, &typ.Fields[0]) {
		titles[c.ID[strings.LastIndex(c.ID, ".")+1:]] = c.Title
	}
	for slug, want := range map[string]string{"too-low": "below 0 W", "too-high": "above 3680 W"} {
		if !strings.Contains(titles[slug], want) {
			t.Errorf("%s: %q, want it to say %q", slug, titles[slug], want)
		}
	}
	for _, c := range fieldCases(oracle.Types[3], &oracle.Types[3].Fields[1]) {
		if strings.HasSuffix(c.ID, ".too-low") && !strings.Contains(c.Title, "below -50 °C") {
			t.Errorf("the thermostat's too-low case says %q", c.Title)
		}
	}
}
