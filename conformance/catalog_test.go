package conformance

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestCatalogCoversEveryTypeAndFormat checks the catalog's shape: every
// device type has a valid MUST check in each format, every check has a
// published section, and IDs are unique.
func TestCatalogCoversEveryTypeAndFormat(t *testing.T) {
	all := Checks()
	seen := map[string]bool{}
	sections := map[string]bool{}
	for _, s := range check.Sections {
		sections[s.Number] = true
	}
	for _, m := range all {
		if seen[m.ID] {
			t.Errorf("duplicate ID %s", m.ID)
		}
		seen[m.ID] = true
		if !sections[m.Section] {
			t.Errorf("%s traces to section %q, which the published interface does not have", m.ID, m.Section)
		}
		if m.Level == check.Must && strings.Contains(m.Assertion, "SHOULD") {
			t.Errorf("%s is MUST but asserts in SHOULD wording", m.ID)
		}
	}
	for _, ty := range device.Types {
		for _, f := range []string{"json", "xml"} {
			id := "command." + check.Slug(ty.Name) + ".valid." + f
			if m, ok := Catalog().Lookup(id); !ok || m.Level != check.Must {
				t.Errorf("no MUST check %s", id)
			}
		}
	}
	for _, id := range []string{
		"command.light-dimmer.dimming.0.json", "command.light-dimmer.dimming.101.xml",
		"command.infrared-sensor.code.5.json", "command.infrared-sensor.code.0.xml",
		"command.thermostat.cooling_point.xml-name-in-json.json.contract",
		"command.method.get.json", "command.content-type.missing.xml",
		"message.message_value.no-equals.json", "update_name.name.missing.xml",
	} {
		if _, ok := Catalog().Lookup(id); !ok {
			t.Errorf("the catalog lacks %s", id)
		}
	}
}
