package explore

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// TestClassify: each kind of answer disagreement gets the level of the
// sentence that decides it, its rule, and that rule's sentence.
func TestClassify(t *testing.T) {
	w, _ := NewWorld(fleet.Demo())
	rs := OracleRules()
	m := NewModel(w, rs)
	a := w.Accounts[0]
	g := a.Gateways[0]
	var dimmer, relay WDevice
	for _, d := range g.Devices {
		switch d.Type {
		case "Light Dimmer":
			dimmer = d
		case "Relay Module":
			relay = d
		}
	}
	cmd := func(d WDevice, kv ...KV) Op {
		return Op{Kind: Command, Format: "json", Account: a.ID, Key: a.Key, MAC: g.MAC, SN: d.SN, Type: d.Type, Fields: kv}
	}
	success := Result{Answer: Answer{Status: 200, Success: true}}
	refused := func(status int, code, field string) Result {
		return Result{Answer: Answer{Status: status, Code: code, Field: field}}
	}
	wrongSign := cmd(dimmer, KV{Key: "dimming", Value: "50"})
	wrongSign.BadSign = true
	for _, tc := range []struct {
		name        string
		op          Op
		got         Result
		level, rule string
	}{
		{"a dimming of 101 accepted", cmd(dimmer, KV{Key: "dimming", Value: "101"}), success, MUST, "API-2.3.dimming"},
		{"a published value refused", cmd(relay, KV{Key: "io", Value: "On"}), refused(400, "invalid_field", "io"), MUST, "API-2.3.on-off"},
		{"a lower-case value refused", cmd(relay, KV{Key: "io", Value: "on"}), refused(400, "invalid_field", "io"), SHOULD, "C-2.enum-case"},
		{"a JSON number refused", cmd(dimmer, KV{Key: "dimming", Value: "50", Number: true}), refused(400, "invalid_field", "dimming"), SHOULD, "C-2.number-forms"},
		{"another code for a value", cmd(dimmer, KV{Key: "dimming", Value: "101"}), refused(400, "invalid_value", "dimming"), SHOULD, "C-4.answers"},
		{"another field for a value", cmd(dimmer, KV{Key: "dimming", Value: "101"}), refused(400, "invalid_field", "sn"), SHOULD, "C-4.answers"},
		{"a wrong sign accepted", wrongSign, success, MUST, "API-5.authentication"},
		{"a wrong sign refused with another code", wrongSign, refused(403, "forbidden", ""), SHOULD, "C-1.sign"},
		{"no answer", cmd(relay, KV{Key: "io", Value: "On"}), Result{Err: "connection reset"}, MUST, "C-4.answers"},
	} {
		j := Classify(rs, tc.op, m.Judge(tc.op), tc.got)
		if j.Level != tc.level || j.Rule != tc.rule || !strings.Contains(j.Quote, "\"") {
			t.Errorf("%s: %s %s %q, want %s %s with its sentence", tc.name, j.Level, j.Rule, j.Quote, tc.level, tc.rule)
		}
	}
}
