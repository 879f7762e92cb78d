package batch

import (
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// TestLaneJudgesEveryFieldAndTellsRivalsApart: a state check sent in the
// slow device's lane (lanes.go) passes only when, right after its answer,
// every field shows exactly what its command sent and the name is
// unchanged; a read showing exactly the whole state a rival leaves (a
// command in flight meanwhile) leaves it unjudged, to run alone; anything
// else (a value nobody sent, one rival's value in one field only, a
// refusal, the name changed) fails it, and then it is confirmed alone; a
// MUST check does not judge the letter case of an enumerated value, a
// SHOULD check does.
func TestLaneJudgesEveryFieldAndTellsRivalsApart(t *testing.T) {
	ok := &client.Response{Status: 200, StatusField: "success"}
	want := map[string]string{"mode": "Cool", "cooling_point": "26", "heating_point": "20.125", "fan": "Auto"}
	rival := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range want {
			m[a] = b
		}
		m[k] = v
		return m
	}
	lane := func(state map[string]any, name string, resp *client.Response, rivals ...map[string]string) *laneResult {
		return &laneResult{typ: "Thermostat", field: "heating_point", want: want, rivals: rivals, name: "Living Room",
			resp: resp, own: observer.Device{Name: name, State: state}}
	}
	exact := map[string]any{"mode": "Cool", "cooling_point": 26.0, "heating_point": 20.125, "fan": "Auto"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range exact {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		name      string
		r         *laneResult
		strict    bool
		unjudged  bool
		failsWith string // "" to pass
	}{
		{"every field as sent", lane(exact, "Living Room", ok, rival("heating_point", "21"), rival("mode", "Heat")), true, false, ""},
		{"a rival's state: it landed after", lane(with("heating_point", -50.0), "Living Room", ok, rival("heating_point", "21"), rival("heating_point", "-50")), true, true, ""},
		{"another field's rival landed after", lane(with("mode", "Heat"), "Living Room", ok, rival("mode", "Heat")), true, true, ""},
		{"a value nobody sent", lane(with("heating_point", 20.12), "Living Room", ok, rival("heating_point", "21"), rival("heating_point", "-50")), true, false, `heating_point is "20.12", not "20.125"`},
		{"a rival's value in one field, not its whole state", lane(with("fan", "On"), "Living Room", ok, rival("heating_point", "21"), rival("mode", "Heat")), true, false, `fan is "On", not "Auto"`},
		{"a value sent before, no rival's", lane(with("heating_point", 20.0), "Living Room", ok), true, false, `heating_point is "20"`},
		{"the name changed", lane(exact, "Kitchen", ok), true, false, "changed the name"},
		{"refused", lane(exact, "Living Room", &client.Response{Status: 400, StatusField: "error"}), true, false, "not accepted"},
		{"no answer", &laneResult{typ: "Thermostat", field: "heating_point", want: want, err: errNoAnswer}, true, false, "no answer"},
		{"letter case, MUST", lane(with("mode", "cool"), "Living Room", ok), false, false, ""},
		{"letter case, SHOULD", lane(with("mode", "cool"), "Living Room", ok), true, false, `mode is "cool", not "Cool"`},
	} {
		if got := laneUnjudged(tc.r); got != tc.unjudged {
			t.Errorf("%s: unjudged %v, want %v", tc.name, got, tc.unjudged)
		}
		if tc.unjudged {
			continue
		}
		why := judgeLane("Thermostat", tc.r, tc.strict)
		switch {
		case tc.failsWith == "" && why != "":
			t.Errorf("%s: failed (%s), want a pass", tc.name, why)
		case tc.failsWith != "" && !strings.Contains(why, tc.failsWith):
			t.Errorf("%s: %q, want a failure saying %q", tc.name, why, tc.failsWith)
		}
	}
}

// TestProgressSaysHowTheLaneRan: once a slow device's state checks of
// valid values were sent together, the progress line names the device,
// its median answer, how many were sent so, in how long, and how many ran
// alone again; it no longer says that they run one at a time.
func TestProgressSaysHowTheLaneRan(t *testing.T) {
	demo := fleet.Demo()
	tgt, err := demo.Target()
	if err != nil {
		t.Fatal(err)
	}
	const sn = "0123456789abcdef0123456789abcd04"
	s := New(Config{Bench: &catalog.Bench{Fleet: demo, Target: tgt, Workers: 1}})
	s.answers = map[string][]time.Duration{sn: {1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond}}
	s.lanes = map[string]lanesNote{sn: {checks: 110, alone: 2, took: 24 * time.Second}}
	note := s.SlowNote()
	want := "slow device Thermostat " + sn + ": median answer 1.5s (110 state checks of valid values sent on it together in 24s, 150ms apart"
	if !strings.Contains(note, want) || !strings.Contains(note, "2 ran alone again") || strings.Contains(note, "no other Thermostat") {
		t.Errorf("progress note %q, want it to say %q and how many ran alone again", note, want)
	}
}

type noAnswer struct{}

func (noAnswer) Error() string { return "connection refused" }

var errNoAnswer error = noAnswer{}
