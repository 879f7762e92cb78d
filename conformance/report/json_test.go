package report_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// TestJSONWritesEachExchangeOnce: an exchange a check repeats, request and
// answer alike (a refusal's .contract twin, its parity check), is written
// once in report.json and read back whole at every check that made it; a
// body longer than report.MaxJSONBody keeps its start and says it was cut.
func TestJSONWritesEachExchangeOnce(t *testing.T) {
	ex := func(body string) client.Exchange {
		return client.Exchange{Method: "POST", URL: "http://gw/v1/services/gateway/command", RequestBody: body, Status: 200, ResponseBody: `{"status":"success"}`}
	}
	a, b := ex(`{"control":{"dimming":"101"}}`), ex(`<xml><control><dimming>101</dimming></control></xml>`)
	long := ex(`{"control":{"name":"` + strings.Repeat("x", 64<<10) + `"}}`)
	failed := func(id string, exs ...client.Exchange) report.Result {
		return report.Result{ID: id, Level: "MUST", Section: "2.3", Title: id, Outcome: report.Failed, State: report.Failed, Failure: "accepted", Exchanges: exs}
	}
	// A check confirmed alone: its control is another check's exchange,
	// and its own request, sent twice, is the same exchange twice.
	c := ex(`{"control":{"dimming":"-1"}}`)
	d := report.Document{Target: "http://gw", Verdict: report.VerdictFail, Results: []report.Result{
		failed("D.json", a), failed("D.json.contract", a), failed("D.parity", a, b), failed("D.xml", b), failed("L.json", long),
		failed("N.json", b, c, c), failed("N.json.contract", c),
	}}
	path := filepath.Join(t.TempDir(), report.JSONFile)
	if err := report.WriteJSON(path, d); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if n := strings.Count(string(raw), `dimming\":\"101`); n != 1 {
		t.Errorf("the JSON exchange is written %d times, want once", n)
	}
	var got report.Document
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"D.json": {a.RequestBody}, "D.json.contract": {a.RequestBody}, "D.parity": {a.RequestBody, b.RequestBody}, "D.xml": {b.RequestBody},
		"N.json": {b.RequestBody, c.RequestBody, c.RequestBody}, "N.json.contract": {c.RequestBody}}
	for _, r := range got.Results {
		var bodies []string
		for _, e := range r.Exchanges {
			bodies = append(bodies, e.RequestBody)
		}
		if w, ok := want[r.ID]; ok && strings.Join(bodies, "|") != strings.Join(w, "|") {
			t.Errorf("%s read back with %q, want %q", r.ID, bodies, w)
		}
		if r.ID == "L.json" {
			if body := r.Exchanges[0].RequestBody; len(body) > report.KeptBody+100 || !strings.Contains(body, report.BodyCut) || !strings.HasPrefix(body, long.RequestBody[:report.KeptBody]) {
				t.Errorf("the long body is kept as %d bytes: %.80q", len(body), body)
			}
		}
	}
}

// TestJSONListsPlainPassedChecksByLevel: a passed MUST or SHOULD check with
// nothing but its time to say is one line under "passed" (level, ID, time),
// not a result of its own; one with settle lines keeps its line in
// "results". Reading the file gives every result back, in its order; a
// report.json of an earlier version, every passed check a line of
// "results", reads the same; a check listed twice is refused.
func TestJSONListsPlainPassedChecksByLevel(t *testing.T) {
	pass := func(id, level string, ms float64) report.Result {
		return report.Result{ID: id, Level: level, Outcome: report.Passed, DurationMS: ms}
	}
	settled := pass("E.2", "MUST", 300.5)
	settled.Settle = []string{"changed after 300 ms"}
	failed := report.Result{ID: "C.10", Level: "MUST", Section: "2.3", Title: "C.10", Assertion: "C.10 MUST", Outcome: report.Failed, Failure: "accepted"}
	spec := report.Result{Title: "a spec", Text: "a spec", Outcome: report.Failed, Failure: "boom", Node: "BeforeSuite"}
	d := report.Document{Target: "http://gw", Verdict: report.VerdictFail, Results: []report.Result{
		pass("C.2", "MUST", 1.25), failed, pass("C.11", "SHOULD", 0), pass("D.1", "SHOULD", 12), settled, spec,
	}}
	path := filepath.Join(t.TempDir(), report.JSONFile)
	if err := report.WriteJSON(path, d); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var wire struct {
		Results []map[string]any              `json:"results"`
		Passed  map[string]map[string]float64 `json:"passed"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	want := map[string]map[string]float64{"MUST": {"C.2": 1.25}, "SHOULD": {"C.11": 0, "D.1": 12}}
	if !reflect.DeepEqual(wire.Passed, want) {
		t.Errorf("passed %v, want %v\n%s", wire.Passed, want, raw)
	}
	var lines []string
	for _, r := range wire.Results {
		lines = append(lines, fmt.Sprintf("%v %v", r["id"], r["title"]))
	}
	if strings.Join(lines, "|") != "C.10 C.10|E.2 <nil>|<nil> a spec" {
		t.Errorf("results %q, want the failed check, the settled one and the spec\n%s", lines, raw)
	}
	if !strings.Contains(string(raw), "\n\"C.11\":0,\n\"D.1\":12\n") {
		t.Errorf("a passed check is not one line of its own:\n%s", raw)
	}
	var got report.Document
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Results, d.Results) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got.Results, d.Results)
	}

	// An earlier version's file: every passed check a line of "results".
	old := `{"target": "http://gw", "verdict": "FAIL", "results": [
{"id":"C.2","level":"MUST","outcome":"passed","duration_ms":1.25},
{"id":"C.10","level":"MUST","section":"2.3","title":"C.10","assertion":"C.10 MUST","outcome":"failed","failure":"accepted","duration_ms":0},
{"id":"C.11","level":"SHOULD","outcome":"passed","duration_ms":0},
{"id":"D.1","level":"SHOULD","outcome":"passed","duration_ms":12},
{"id":"E.2","level":"MUST","outcome":"passed","duration_ms":300.5,"settle":["changed after 300 ms"]},
{"level":"","title":"a spec","text":"a spec","node":"BeforeSuite","outcome":"failed","failure":"boom","duration_ms":0}
]}`
	var older report.Document
	if err := json.Unmarshal([]byte(old), &older); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(older.Results, d.Results) {
		t.Errorf("an earlier version's report.json read as:\n%+v\nwant\n%+v", older.Results, d.Results)
	}

	twice := strings.Replace(string(raw), `"D.1":12`, `"D.1":12, "C.10":1`, 1)
	if err := json.Unmarshal([]byte(twice), &got); err == nil || !strings.Contains(err.Error(), `"C.10" is listed twice`) {
		t.Errorf("a check listed twice: %v", err)
	}
}

// TestJSONWritesEachQuotedSentenceOnce: the sentence of the texts that
// ends the assertions of several results (a refusal's JSON, XML and parity
// checks quote the same one) is written once, under "sentences", and each
// assertion reads back whole; a sentence one assertion alone quotes stays
// in it.
func TestJSONWritesEachQuotedSentenceOnce(t *testing.T) {
	const sign = "The sentence that forbids it (published): “| sign | string | yes | 32 hexadecimal characters, placeholder <SIGNATURE> |”"
	const body = "The sentence that forbids it (published): “| Request body | `control` with the envelope fields (2.1), `sn`, `name` |”"
	failed := func(id, assertion string) report.Result {
		return report.Result{ID: id, Level: "MUST", Section: "2.1", Title: id, Assertion: assertion, Outcome: report.Failed, Failure: "accepted"}
	}
	d := report.Document{Target: "http://gw", Verdict: report.VerdictFail, Results: []report.Result{
		failed("S.json", "A command with sign of 31 characters MUST NOT be answered with success. "+sign),
		failed("S.parity", "A command with sign of 31 characters MUST get the same verdict in JSON as in XML. "+sign),
		failed("S.xml", "A command with sign of 31 characters MUST NOT be answered with success. "+sign),
		failed("R.json", "A rename without sn MUST NOT be answered with success. "+body),
		failed("T.json", "A command that says “on” MUST be accepted."),
	}}
	path := filepath.Join(t.TempDir(), report.JSONFile)
	if err := report.WriteJSON(path, d); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if n := strings.Count(string(raw), "32 hexadecimal characters"); n != 1 {
		t.Errorf("the sign's sentence is written %d times, want once:\n%s", n, raw)
	}
	var wire struct {
		Sentences []string `json:"sentences"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil || len(wire.Sentences) != 1 || wire.Sentences[0] != sign {
		t.Errorf("sentences %q (%v), want the sign's alone", wire.Sentences, err)
	}
	var got report.Document
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Results, d.Results) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got.Results, d.Results)
	}
	bad := strings.Replace(string(raw), `"sentence":1`, `"sentence":2`, 1)
	if err := json.Unmarshal([]byte(bad), &got); err == nil || !strings.Contains(err.Error(), "sentence 2 is not one of the 1") {
		t.Errorf("a sentence that is not listed: %v", err)
	}
}
