package explore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// wireBases are valid operations of every kind in both formats on the
// demo fleet.
func wireBases(w *World) []Op {
	a := w.Accounts[0]
	mac := a.Gateways[0].MAC
	var dimmer, thermostat WDevice
	for _, d := range a.Gateways[0].Devices {
		switch d.Type {
		case "Light Dimmer":
			dimmer = d
		case "Thermostat":
			thermostat = d
		}
	}
	var out []Op
	for _, format := range []string{"json", "xml"} {
		base := Op{Format: format, Account: a.ID, Key: a.Key, MAC: mac, Note: "valid"}
		c := base
		c.Kind, c.SN, c.Type, c.Fields = Command, dimmer.SN, dimmer.Type, []KV{{Key: "dimming", Value: "55"}}
		th := base
		th.Kind, th.SN, th.Type, th.Fields = Command, thermostat.SN, thermostat.Type, []KV{{Key: "mode", Value: "Cool"}, {Key: "cooling_point", Value: "24.5"}}
		rn := base
		rn.Kind, rn.SN, rn.Fields = Rename, dimmer.SN, []KV{{Key: "name", Value: "Wire " + format}}
		m := base
		m.Kind, m.Fields = Message, []KV{{Key: "message_type", Value: "message"}, {Key: "message_value", Value: "brightness=80"}}
		out = append(out, c, th, rn, m)
	}
	return out
}

// TestWireFormsJudgedAsGwsimAnswers: every wire form, on every kind of
// operation and in both formats it applies to, sent to gwsim: the model's
// verdict (the oracle's JudgeRequest on the request as built, then the
// window, the sign, the path) agrees with gwsim's answer, and an accepted
// form stores what the plain request stores.
func TestWireFormsJudgedAsGwsimAnswers(t *testing.T) {
	t.Parallel()
	f := fleet.Demo()
	url := startSim(t, f)
	w, err := NewWorld(f)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := NewTarget(url, f, nil, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	tg.Observer = url
	m := NewModel(w, OracleRules())
	ctx := context.Background()
	kinds := map[string]bool{}
	accepted, refused := 0, 0
	for _, slug := range WireForms() {
		for _, base := range wireBases(w) {
			op := base
			op.Wire = slug
			if !wireTable[slug].applies(op, w) {
				continue
			}
			kinds[slug] = true
			v := m.Judge(op)
			got := tg.Do(ctx, op)
			if got.Err != "" || !v.Expect.Matches(got.Answer) {
				t.Errorf("%s: gwsim answered %s (%s), the model expects %s\n%s", op, got.Answer, got.Err, v.Expect, got.Exchange.RequestBody)
				continue
			}
			if !got.Answer.Success {
				refused++
				continue
			}
			accepted++
			if op.Kind == Message {
				continue
			}
			read := tg.Do(ctx, Op{Kind: ReadDevice, MAC: op.MAC, SN: op.SN})
			for _, kv := range op.Fields {
				if read.Device == nil || !strings.EqualFold(read.Device.State[kv.Key], kv.Value) && read.Device.Name != kv.Value && !sameValue(read.Device.State[kv.Key], kv.Value) {
					t.Errorf("%s: accepted, but the device shows %+v", op, read.Device)
				}
			}
		}
	}
	for _, slug := range WireForms() {
		if !kinds[slug] {
			t.Errorf("wire form %q applies to no operation", slug)
		}
	}
	if accepted == 0 || refused == 0 {
		t.Errorf("%d forms accepted, %d refused", accepted, refused)
	}
	t.Logf("%d wire forms: %d requests accepted, %d refused as the model expects", len(WireForms()), accepted, refused)
}

// TestWireFormsOnlyWhenAsked: without WireForms the generator draws no
// wire form and no near miss; with it, some of each.
func TestWireFormsOnlyWhenAsked(t *testing.T) {
	w, err := NewWorld(fleet.Demo())
	if err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		g := &Generator{W: w, Rules: OracleRules(), WireForms: on}
		wire, near := 0, 0
		for round := range 20 {
			for _, op := range g.Sequence(7, round, 100) {
				if op.Wire != "" {
					wire++
				}
				if strings.HasPrefix(op.Note, "api_key ") || strings.Contains(op.Note, "above") {
					near++
				}
			}
		}
		if on != (wire > 0) {
			t.Errorf("WireForms %v: %d wire forms drawn", on, wire)
		}
		if on && near == 0 {
			t.Errorf("WireForms on: no near miss drawn")
		}
	}
}

// Every wire form names a rule of rules.yaml, which a difference about it
// is filed under.
func TestWireFormsNameARule(t *testing.T) {
	for _, slug := range WireForms() {
		if r := WireRule(slug); r == "" || RuleQuote(r) == "" {
			t.Errorf("%s: rule %q is not in rules.yaml", slug, r)
		}
	}
}

// Only the forms a few seconds past the window depend on the target's
// clock.
func TestWireNeedsClock(t *testing.T) {
	var clock []string
	for _, slug := range WireForms() {
		if WireNeedsClock(slug) {
			clock = append(clock, slug)
		}
	}
	if len(clock) != 2 || !strings.Contains(clock[0], "5 s past the window") || !strings.Contains(clock[1], "5 s past the window") {
		t.Errorf("forms that need the clock: %q", clock)
	}
}
