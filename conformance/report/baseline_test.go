package report

import (
	"testing"
	"time"
)

// TestKnownRuleReadsABaselineByRule: the model-based phase and gwconform
// explore report rules broken, not checks: an entry names a rule known by
// its ID, by a glob of IDs, or by a check whose case rules.yaml maps to it;
// an expired entry makes nothing known.
func TestKnownRuleReadsABaselineByRule(t *testing.T) {
	today := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	bl, err := ParseBaselineOn([]byte(`entries:
  - {check: command.light-dimmer.dimming.101.json, reason: accepted above 100, owner: firmware, expires: 2027-01-06}
  - {check: 'API-2.3.mo*', reason: modes, owner: app, expires: 2026-12-07}
  - {check: API-2.3.fan, reason: fans, owner: app, expires: 2026-12-06}
`), today.AddDate(0, 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	for rule, want := range map[string]string{
		"API-2.3.dimming": "accepted above 100 (firmware, until 2027-01-06)",
		"API-2.3.mode":    "modes (app, until 2026-12-07)",
		"API-2.3.fan":     "", // expired yesterday
		"API-2.3.code":    "",
		"":                "",
	} {
		if got := bl.KnownRule(rule, today); got != want {
			t.Errorf("KnownRule(%q) = %q, want %q", rule, got, want)
		}
	}
	var none *Baseline
	if got := none.KnownRule("API-2.3.dimming", today); got != "" {
		t.Errorf("no baseline: %q", got)
	}
}
