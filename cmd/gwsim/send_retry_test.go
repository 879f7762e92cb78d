package main

import (
	"encoding/xml"
	"net/http"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestSendRetriesOnlyWhenAsked: gwsim send sends one request, whatever
// the answer (a 503 with Retry-After included), unless --retries asks for
// more; then it says each retry and prints each exchange. In both
// formats; the requests gwsim received are counted by its journal.
func TestSendRetriesOnlyWhenAsked(t *testing.T) {
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			sim := simtest.Start(t, simulator.Options{Fleet: fleet.Demo()})
			sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1}`, nil)
			requests := func() int {
				var entries []map[string]any
				sim.Client.AdminJSON(http.MethodGet, "/_sim/journal", "", &entries)
				n := 0
				for _, e := range entries {
					if e["path"] == "/v1/services/gateway/message" {
						n++
					}
				}
				return n
			}
			code, out, _ := run("send", "message", "--target", sim.URL(), "--format", format, "brightness=1")
			if code != 1 || strings.Count(out, "< HTTP 503") != 1 || strings.Contains(out, "retry") || requests() != 1 {
				t.Fatalf("without --retries: exit %d, %d requests:\n%s", code, requests(), out)
			}
			code, out, _ = run("send", "message", "--target", sim.URL(), "--format", format, "--retries", "2", "brightness=2")
			if code != 1 || strings.Count(out, "< HTTP 503") != 3 || requests() != 4 {
				t.Fatalf("--retries 2: exit %d, %d requests in all:\n%s", code, requests(), out)
			}
			for _, want := range []string{"# retry 1 of 2: the answer asked to wait 1s (Retry-After)", "# retry 2 of 2"} {
				if !strings.Contains(out, want) {
					t.Errorf("--retries 2 does not say %q:\n%s", want, out)
				}
			}
			if code, _, errOut := run("send", "message", "--target", sim.URL(), "--retries", "-1", "brightness=3"); code != 2 || !strings.Contains(errOut, "--retries") {
				t.Errorf("--retries -1: exit %d: %s", code, errOut)
			}
		})
	}
}

// TestSendXMLBodyIsXML: the XML body gwsim send prints, its sign masked,
// is well-formed XML whose sign reads <SIGNATURE>.
func TestSendXMLBodyIsXML(t *testing.T) {
	sim := simtest.Start(t, simulator.Options{Fleet: fleet.Demo()})
	code, out, _ := run("send", "command", "--target", sim.URL(), "--format", "xml", "--type", "Light Dimmer", "dimming=33")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	_, rest, _ := strings.Cut(out, ">\n")
	body, _, _ := strings.Cut(rest, "\n\n")
	var doc struct {
		Control struct {
			Sign string `xml:"sign"`
		} `xml:"control"`
	}
	if err := xml.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("the printed body is not XML (%v):\n%s", err, body)
	}
	if doc.Control.Sign != "<SIGNATURE>" {
		t.Errorf("sign %q, want <SIGNATURE>:\n%s", doc.Control.Sign, body)
	}
}
