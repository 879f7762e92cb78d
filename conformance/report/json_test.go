package report_test

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	d := report.Document{Target: "http://gw", Verdict: report.VerdictFail, Results: []report.Result{
		failed("D.json", a), failed("D.json.contract", a), failed("D.parity", a, b), failed("D.xml", b), failed("L.json", long),
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
	want := map[string][]string{"D.json": {a.RequestBody}, "D.json.contract": {a.RequestBody}, "D.parity": {a.RequestBody, b.RequestBody}, "D.xml": {b.RequestBody}}
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
