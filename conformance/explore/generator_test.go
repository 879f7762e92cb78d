package explore

import (
	"reflect"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

func TestSameSeedSameSequence(t *testing.T) {
	w, err := NewWorld(fleet.Demo())
	if err != nil {
		t.Fatal(err)
	}
	g := &Generator{W: w, Rules: OracleRules(), Reads: true}
	a, b := g.Sequence(42, 3, 500), g.Sequence(42, 3, 500)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 42 round 3 drew two different sequences")
	}
	if reflect.DeepEqual(a, g.Sequence(43, 3, 500)) || reflect.DeepEqual(a, g.Sequence(42, 4, 500)) {
		t.Fatal("another seed or round drew the same sequence")
	}
	// The sequence covers what docs/explore.md promises.
	kinds, formats, macs, accounts, invalid := map[Kind]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, 0
	m := NewModel(w, OracleRules())
	for _, op := range a {
		kinds[op.Kind] = true
		formats[op.Format] = true
		macs[op.MAC] = true
		accounts[op.Account] = true
		if !op.IsRead() && m.Judge(op).Expect.Status != 200 {
			invalid++
		}
	}
	if len(kinds) != 5 || !formats["json"] || !formats["xml"] || len(macs) < 3 || len(accounts) < 2 || invalid < 50 {
		t.Errorf("500 operations drew kinds %v, formats %v, %d gateways, %d accounts, %d invalid", kinds, formats, len(macs), len(accounts), invalid)
	}
}

// TestModelJudges holds the model to the texts on a few hand-written
// operations, one per verdict.
func TestModelJudges(t *testing.T) {
	w, _ := NewWorld(fleet.Demo())
	m := NewModel(w, OracleRules())
	acct, key, gw := "5f3a9c0e1b2d4f6a8c0e1b2d", "demo-key", "a4c138f0e2b1"
	thermo := "0123456789abcdef0123456789abcd04"
	cmd := func(f ...KV) Op {
		return Op{Kind: Command, Format: "json", Account: acct, Key: key, MAC: gw, SN: thermo, Type: "Thermostat", Fields: f}
	}
	for _, tc := range []struct {
		op   Op
		want Expect
	}{
		{cmd(KV{Key: "mode", Value: "cool"}), success},
		{cmd(KV{Key: "cooling_point", Value: "100.5"}), refuse(400, "cooling point", "invalid_field")},
		{cmd(), refuse(400, "mode", "missing_field")},
		{cmd(KV{Key: "dimming", Value: "5"}), refuse(400, "dimming", "unexpected_field")},
		{func() Op { o := cmd(KV{Key: "mode", Value: "Cool"}); o.Key = "other-key"; return o }(), refuse(403, "", "account_mismatch")},
		{func() Op { o := cmd(KV{Key: "mode", Value: "Cool"}); o.Key = "nobody"; return o }(), refuse(401, "", "unknown_api_key")},
		{func() Op { o := cmd(KV{Key: "mode", Value: "Cool"}); o.BadSign = true; return o }(), refuse(401, "", "bad_signature")},
		{func() Op { o := cmd(KV{Key: "mode", Value: "Cool"}); o.MAC = "b5d249a1f3c2"; return o }(), refuse(404, "", "gateway_not_found")},
		{func() Op { o := cmd(KV{Key: "mode", Value: "Cool"}); o.MAC = "a4c138f0e2b2"; return o }(), refuse(404, "", "device_not_found")},
		{func() Op { o := cmd(KV{Key: "dimming", Value: "5"}); o.Type = "Light Dimmer"; return o }(), refuse(409, "", "type_mismatch")},
	} {
		if got := m.Judge(tc.op); !reflect.DeepEqual(got.Expect, tc.want) {
			t.Errorf("%s: model says %s, want %s", tc.op, got.Expect, tc.want)
		}
	}
	// A form neither text decides is open: any answer conforms, and what
	// it stored is no longer known. A JSON number in any syntax is a
	// number (CONTRACT 2).
	for _, kv := range []KV{{Key: "cooling_point", Value: "+21"}, {Key: "cooling_point", Value: " 21"},
		{Key: "cooling_point", Value: "2.1e1"}} {
		if v := m.Judge(cmd(kv)); !v.Open || !v.Expect.Any {
			t.Errorf("%+v: model says %s, want any answer (open)", kv, v.Expect)
		}
	}
	// A listed value with white space around it is not listed: refused.
	if v := m.Judge(cmd(KV{Key: "mode", Value: " Cool"})); v.Open || !reflect.DeepEqual(v.Expect, refuse(400, "mode", "invalid_field")) {
		t.Errorf("mode \" Cool\": model says %s, want a refusal", v.Expect)
	}
	if v := m.Judge(cmd(KV{Key: "cooling_point", Value: "2.1e1", Number: true})); v.Open || !reflect.DeepEqual(v.Expect, success) || v.Set["cooling_point"] != "21" {
		t.Errorf("JSON 2.1e1: %+v, want success storing 21", v)
	}
	k := devKey{gw, thermo}
	m.Devices[k] = DeviceState{Name: "Living Room", State: map[string]string{"mode": "Auto", "cooling_point": "26"}}
	m.Step(cmd(KV{Key: "mode", Value: "cOOL"}))
	m.Step(cmd(KV{Key: "cooling_point", Value: "+21.50"}, KV{Key: "mode", Value: "Heat!"}))
	m.Step(Op{Kind: Rename, Format: "xml", Account: acct, Key: key, MAC: gw, SN: thermo, Fields: []KV{{Key: "name", Value: "  Salon  "}}})
	want := DeviceState{Name: "Salon", State: map[string]string{"mode": "Cool", "cooling_point": "26"}}
	if d := CheckDevice(want, m.Devices[k]); d != "" {
		t.Errorf("model state: %s", d)
	}
	if d := CheckDevice(want, DeviceState{Name: "Salon", State: map[string]string{"mode": "Cool", "cooling_point": "26.0"}}); d != "" {
		t.Errorf("26.0 is 26: %s", d)
	}
	if CheckDevice(want, DeviceState{Name: "Salon", State: map[string]string{"mode": "cool", "cooling_point": "26"}}) == "" {
		t.Error("an enumerated value stored in another case passed")
	}
	log := []Msg{{"message", "a=1"}, {"message", "b=2"}}
	if CheckLog(log, log[1:]) == "" || CheckLog(log, append(log, Msg{"x", "c=3"})) == "" || CheckLog(log, []Msg{log[1], log[0]}) == "" {
		t.Error("a short, long or reordered log passed")
	}
}

// TestSequencesAroundRefusals: a sequential run draws refusals followed by
// valid commands to the same device that carry every field of its type,
// each read back at once, when asked to (explore); concurrent clients
// draw none.
func TestSequencesAroundRefusals(t *testing.T) {
	w, err := NewWorld(fleet.Demo())
	if err != nil {
		t.Fatal(err)
	}
	rules := OracleRules()
	m := NewModel(w, rules)
	groups := func(ops []Op) int {
		n := 0
		for i := 0; i+2 < len(ops); i++ {
			ref, cmd, read := ops[i], ops[i+1], ops[i+2]
			if ref.Kind == Command && cmd.Kind == Command && read.Kind == ReadDevice &&
				m.Judge(ref).Expect.Status != 200 && m.Judge(cmd).Expect.Status == 200 &&
				ref.device() == cmd.device() && cmd.device() == read.device() &&
				len(cmd.Fields) == len(rules.Fields(w.devs[cmd.device()])) {
				n++
			}
		}
		return n
	}
	g := &Generator{W: w, Rules: rules, Reads: true, AroundRefusals: true}
	if n := groups(g.Sequence(42, 0, 1000)); n < 10 {
		t.Errorf("1000 operations drew %d refusals followed by a whole valid command to that device and its read", n)
	}
	// diff keeps its own stream of single operations.
	plain := &Generator{W: w, Rules: rules, Reads: true}
	if n := groups(plain.Sequence(42, 0, 1000)); n > 3 {
		t.Errorf("a generator without AroundRefusals drew %d groups around a refusal", n)
	}
	g.Clients = 4
	if n := groups(g.Sequence(42, 0, 1000)); n != 0 {
		t.Errorf("concurrent clients drew %d groups around a refusal", n)
	}
}
