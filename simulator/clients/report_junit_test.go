package clients_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/clients"
)

// TestJUnitBytes: gwsim's client report in JUnit (WriteJUnit) is, byte for
// byte, the document below for each report: one with no client yet, and
// one with a client that broke judgements (texts with quotes, ampersands,
// angle brackets, a tab, a newline and "]]>"), a client that broke none,
// faults it recovered from and one it did not (and one still in force,
// which has no case), and the service behind gwsim proxy. A change to the
// JUnit model or its encoding that moves a byte shows here.
func TestJUnitBytes(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	full := clients.Report{
		Generated: at,
		Clients: []clients.Client{
			{Client: "key-…", ID: "3f2a9c", Judgements: []clients.Judgement{
				{ID: "valid", Name: "app sent only valid requests", Violations: 2, LatestTime: "2026-03-04T05:06:00Z",
					Latest: `setDeviceStatus: field "Relay2" <of Appliance Module Plus> & more]]>`},
				{ID: "fresh", Name: "app's timestamps are fresh", Violations: 1, LatestTime: "2026-03-04T05:06:01Z",
					Latest: "skew 40s\tover the window\nof 30s"},
				{ID: "retry", Name: "app waited out Retry-After on 429, 503 and 504", Passed: true},
			}, Phases: []clients.Phase{
				{Phase: "gateway_offline on gw-1", Recovery: &clients.Recovery{Ended: true, Recovered: true, AfterMS: 120, Text: "recovered 120 ms after the end"}},
				{Phase: "injected_fault <503>", Recovery: &clients.Recovery{Ended: true, Text: `no request to "gw-2" succeeded after the end`}},
				{Phase: "rate_limited", Recovery: &clients.Recovery{Text: "still in force"}},
			}},
			{Client: "abcd…", Judgements: []clients.Judgement{
				{ID: "valid", Name: "app sent only valid requests", Passed: true},
			}},
		},
		Service: &clients.Service{Upstream: "https://api.example/v1?a=1&b=2", Answers: 5, Judgements: []clients.Judgement{
			{ID: "answer-shape", Name: "service answers are well formed", Passed: true},
			{ID: "answer-code", Name: "service error codes are the documented ones", Violations: 3, Latest: `code "oops" & <no field>`},
		}},
	}
	for name, r := range map[string]clients.Report{"empty": {Generated: at}, "full": full} {
		var b bytes.Buffer
		if err := r.WriteJUnit(&b); err != nil {
			t.Fatal(err)
		}
		if got, want := b.String(), wantClientsJUnit[name]; got != want {
			t.Errorf("%s: the JUnit report differs from the document below at %s\ngot:\n%s", name, firstDifference(got, want), got)
		}
	}
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  got  " + gl + "\n  want " + wl
		}
	}
	return "(no line differs)"
}

var wantClientsJUnit = map[string]string{
	"empty": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="gwsim clients" tests="0" failures="0"></testsuites>
`,
	"full": `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="gwsim clients" tests="8" failures="4">
  <testsuite name="client key-… 3f2a9c" tests="3" failures="2" timestamp="2026-03-04T05:06:07Z">
    <testcase name="app sent only valid requests" classname="client key-… 3f2a9c.valid">
      <failure message="app sent only valid requests: 2 times" type="valid">latest, 2026-03-04T05:06:00Z: setDeviceStatus: field &#34;Relay2&#34; &lt;of Appliance Module Plus&gt; &amp; more]]&gt;</failure>
    </testcase>
    <testcase name="app&#39;s timestamps are fresh" classname="client key-… 3f2a9c.fresh">
      <failure message="app&#39;s timestamps are fresh: 1 time" type="fresh">latest, 2026-03-04T05:06:01Z: skew 40s&#x9;over the window&#xA;of 30s</failure>
    </testcase>
    <testcase name="app waited out Retry-After on 429, 503 and 504" classname="client key-… 3f2a9c.retry"></testcase>
  </testsuite>
  <testsuite name="client key-… 3f2a9c faults" tests="2" failures="1" timestamp="2026-03-04T05:06:07Z">
    <testcase name="app recovered after gateway_offline on gw-1" classname="client key-… 3f2a9c faults.recovers"></testcase>
    <testcase name="app recovered after injected_fault &lt;503&gt;" classname="client key-… 3f2a9c faults.recovers">
      <failure message="app recovered after injected_fault &lt;503&gt;: 1 time" type="recovers">latest, : no request to &#34;gw-2&#34; succeeded after the end</failure>
    </testcase>
  </testsuite>
  <testsuite name="client abcd…" tests="1" failures="0" timestamp="2026-03-04T05:06:07Z">
    <testcase name="app sent only valid requests" classname="client abcd….valid"></testcase>
  </testsuite>
  <testsuite name="service https://api.example/v1?a=1&amp;b=2" tests="2" failures="1" timestamp="2026-03-04T05:06:07Z">
    <testcase name="service answers are well formed" classname="service https://api.example/v1?a=1&amp;b=2.answer-shape"></testcase>
    <testcase name="service error codes are the documented ones" classname="service https://api.example/v1?a=1&amp;b=2.answer-code">
      <failure message="service error codes are the documented ones: 3 times" type="answer-code">latest, : code &#34;oops&#34; &amp; &lt;no field&gt;</failure>
    </testcase>
  </testsuite>
</testsuites>
`,
}
