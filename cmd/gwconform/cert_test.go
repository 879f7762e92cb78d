package main_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// signInBody finds a sign value of 32 hex characters in a JSON or XML body,
// raw or escaped inside a report.
var signInBody = regexp.MustCompile(`(?i)sign(\\?"|&#34;|&quot;)?\s*(:|>|&gt;)\s*(\\?"|&#34;|&quot;)?[0-9a-f]{32}`)

// TestReportsCarryNoSignAndCurlLinesSignAfresh: no report holds a sign or
// a secret, and the curl line of a check, pasted later with a body whose
// timestamp is long stale, still gets the answer the check got, because it
// pipes the body through `gwconform sign`.
func TestReportsCarryNoSignAndCurlLinesSignAfresh(t *testing.T) {
	url := startGwsim(t)
	r := gwconform(t, "--target", url, "--ginkgo.focus", `command\.light-dimmer\.valid\.|message\.valid\.`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	for _, name := range []string{"report.json", "junit.xml", "report.html"} {
		b, err := os.ReadFile(filepath.Join(r.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := signInBody.Find(b); m != nil {
			t.Errorf("%s carries a sign: %s", name, m)
		}
		if bytes.Contains(b, []byte("demo-secret")) {
			t.Errorf("%s carries the fleet's secret", name)
		}
	}
	var doc struct {
		Results []struct {
			ID   string   `json:"id"`
			Curl []string `json:"curl"`
		} `json:"results"`
	}
	b, _ := os.ReadFile(filepath.Join(r.dir, "report.json"))
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Dir(bins.gwconform) + string(os.PathListSeparator) + os.Getenv("PATH")
	stale := regexp.MustCompile(`(timestamp(?:":"|>))\d{14}`)
	tried := map[string]bool{}
	for _, res := range doc.Results {
		for _, format := range []string{"json", "xml"} {
			if res.ID != "command.light-dimmer.valid."+format && res.ID != "message.valid."+format || len(res.Curl) == 0 {
				continue
			}
			line := res.Curl[0]
			if !strings.Contains(line, "gwconform sign") {
				t.Fatalf("%s: the curl line does not sign afresh: %s", res.ID, line)
			}
			// As if pasted a day later: the recorded timestamp is stale.
			line = stale.ReplaceAllString(line, "${1}20200101000000")
			cmd := exec.Command("bash", "-c", line)
			cmd.Env = append(os.Environ(), "PATH="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s\n%s", res.ID, err, line, out)
			}
			if !strings.Contains(string(out), "200 OK") || !strings.Contains(string(out), "success") {
				t.Errorf("%s: the pasted curl line did not succeed:\n%s\n%s", res.ID, line, out)
			}
			tried[res.ID] = true
		}
	}
	if len(tried) != 4 {
		t.Fatalf("curl lines tried for %v; want the JSON and XML command and message", tried)
	}
}

// TestShedding429IsCertifiedWithoutFalseFailure: a target that answers
// every fifth request 429 with Retry-After, as a shared staging shedding
// load does, passes; the retries are waited out, not blamed.
func TestShedding429IsCertifiedWithoutFalseFailure(t *testing.T) {
	var n atomic.Int64
	url := faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if n.Add(1)%5 != 0 {
			return false
		}
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"status":"error","error":{"code":"rate_limited","message":"slow down"}}`))
		return true
	})
	r := gwconform(t, "--target", url, "--fail-on", "should", "--ginkgo.label-filter", "!sim")
	if r.code != 0 {
		t.Fatalf("exit %d: a shedding target got a false failure\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	if n.Load() < 100 {
		t.Fatalf("only %d requests reached the target", n.Load())
	}
}
