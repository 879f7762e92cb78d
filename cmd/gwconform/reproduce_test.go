package main

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/conformance/report"
)

// Reproduction that reproduces: the curl line and gwconform replay of a
// check whose body is malformed on purpose send exactly the body the check
// sent, with a fresh timestamp and a valid sign; a sign step that fails
// stops the line instead of sending an empty body.

var (
	tsInBody  = regexp.MustCompile(`("timestamp"\s*:\s*"|<timestamp>)(\d{14})`)
	signInRaw = regexp.MustCompile(`("sign"\s*:\s*"|<sign>)([0-9A-Fa-f]{32})`)
	keyInRaw  = regexp.MustCompile(`("api_key"\s*:\s*"|<api_key>)([^"<]*)`)
	// A run's valid messages carry a value of that run's own
	// (brightness_<run>_<n>), so that no two runs' requests are one
	// request: the run that replays a check names its own.
	runMessage = regexp.MustCompile(`brightness_[0-9a-z]+_(w[0-9]+_)?[0-9]+=`)
	normalized = func(b string) string {
		b = tsInBody.ReplaceAllString(b, "${1}TS")
		b = runMessage.ReplaceAllString(b, "brightness_RUN=")
		return signInRaw.ReplaceAllString(b, "${1}SIGN")
	}
)

func TestMalformedBodiesReplayExactlyAndSigned(t *testing.T) {
	t.Parallel()
	// The target accepts every body the faithful implementation calls
	// malformed, so those checks fail and keep their exchanges; it keeps
	// every body it received.
	var mu sync.Mutex
	var got []string
	api, reads := buggy(t, func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool {
		mu.Lock()
		got = append(got, string(body))
		mu.Unlock()
		rec := httptest.NewRecorder()
		next(rec, r)
		if rec.Code == 400 && strings.Contains(rec.Body.String(), "malformed_body") {
			success(w, r)
			return true
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return true
	})
	fleetFile := indepFleetFile(t, indepKey, indepSecret)
	ids := []string{"message.body.control-twice.json.contract", "message.body.control-twice.xml.contract", "command.body.wrong-root.xml", "update_name.body.truncated.json"}
	args := []string{"--target", api, "--observer", reads, "--fleet", fleetFile, "--allow-partial"}
	for _, id := range ids {
		args = append(args, "--check", id)
	}
	r := gwconform(t, args...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	// Read as gwconform replay reads it: exchanges written once are
	// filled in.
	var doc report.Document
	b, _ := os.ReadFile(filepath.Join(r.dir, "report.json"))
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// sentBy finds the body the target received whose recorded form (its
	// sign redacted, its key masked) the report holds.
	sentBy := func(recorded string) string {
		mu.Lock()
		defer mu.Unlock()
		for _, g := range got {
			m := keyInRaw.ReplaceAllString(signInRaw.ReplaceAllString(g, "${1}<SIGNATURE>"), "${1}KEY")
			m = strings.ReplaceAll(m, "<sign><SIGNATURE>", "<sign>&lt;SIGNATURE&gt;")
			if normalized(m) == normalized(keyInRaw.ReplaceAllString(recorded, "${1}KEY")) {
				return g
			}
		}
		return ""
	}
	last := func() (string, int) {
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1], len(got)
	}
	// signedRight: the body's sign is the md5 sign of its key, secret and
	// timestamp.
	signedRight := func(body string) bool {
		ts, sg := tsInBody.FindStringSubmatch(body), signInRaw.FindStringSubmatch(body)
		if ts == nil || sg == nil {
			return false
		}
		sum := md5.Sum([]byte(indepKey + indepSecret + ts[2]))
		return strings.EqualFold(hex.EncodeToString(sum[:]), sg[2])
	}
	path := filepath.Dir(bins.gwconform) + string(os.PathListSeparator) + os.Getenv("PATH")
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	tried := 0
	for _, res := range doc.Results {
		if res.Outcome != "failed" || len(res.Exchanges) == 0 {
			continue
		}
		// The exchange the check's case sent (after its control, if any).
		i := len(res.Exchanges) - 1
		orig := sentBy(res.Exchanges[i].RequestBody)
		// report.json keeps no curl lines (report.html shows them): each
		// is made from its exchange, as the page makes it.
		curl := res.Exchanges[i].Curl()
		if orig == "" {
			t.Fatalf("%s: the target never received the recorded body %q", res.ID, res.Exchanges[i].RequestBody)
		}
		if !strings.Contains(curl, "gwconform sign") {
			t.Fatalf("%s: the curl line does not sign afresh: %s", res.ID, curl)
		}
		cmd := exec.Command("bash", "-c", curl)
		cmd.Env = append(os.Environ(), "PATH="+path, "GWCONFORM_FLEET="+fleetFile)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: the curl line failed: %v\n%s", res.ID, err, out)
		}
		body, _ := last()
		if normalized(body) != normalized(orig) || !signedRight(body) {
			t.Errorf("%s: the curl line sent\n%q\nthe check sent\n%q (signed right: %v)", res.ID, body, orig, signedRight(body))
		}
		// gwconform replay runs the check again, which sends the same body
		// (among its control and the device put back), and reproduces the
		// failure.
		_, from := last()
		rc := exec.Command(bins.gwconform, "replay", filepath.Join(r.dir, "report.json"), res.ID, "--target", api, "--observer", reads, "--fleet", fleetFile)
		if out, err := rc.CombinedOutput(); err != nil || !strings.Contains(string(out), "REPRODUCED: ") {
			t.Fatalf("%s: gwconform replay: %v\n%s", res.ID, err, out)
		}
		mu.Lock()
		sent := ""
		for _, g := range got[from:] {
			if normalized(g) == normalized(orig) && signedRight(g) {
				sent = g
			}
		}
		mu.Unlock()
		if sent == "" {
			t.Errorf("%s: gwconform replay never sent the check's body\n%q", res.ID, orig)
		}
		// A sign step that fails (a fleet without the body's key) stops
		// the line: nothing is sent, the line fails.
		other := filepath.Join(t.TempDir(), "fleet.yaml")
		os.WriteFile(other, []byte(strings.ReplaceAll(indepFleetYAML("some-other-key", "s"), indepKeyB, "yet-another-key")), 0o600)
		_, before := last()
		cmd = exec.Command("bash", "-c", curl)
		cmd.Env = append(os.Environ(), "PATH="+path, "GWCONFORM_FLEET="+other)
		out, err := cmd.CombinedOutput()
		if _, after := last(); err == nil || after != before {
			t.Errorf("%s: a failed sign step: exit %v, %d request(s) sent; want a failure and none\n%s", res.ID, err, after-before, out)
		}
		tried++
	}
	if tried != len(ids) {
		t.Fatalf("tried %d of the %d malformed checks:\n%s", tried, len(ids), tail(r.stdout))
	}
	// The replay line the reports print runs as pasted, from another
	// folder, with GWCONFORM_FLEET set: it names the report itself, and
	// reproduces the failure (exit 0). Without GWCONFORM_FLEET it runs
	// nothing and names the fleet file it needs.
	j, _ := os.ReadFile(filepath.Join(r.dir, "junit.xml"))
	m := regexp.MustCompile(`reproduce: ([^\n]*gwconform replay [^\n]+)`).FindSubmatch(j)
	if m == nil {
		t.Fatalf("junit.xml prints no replay line")
	}
	line := html.UnescapeString(string(m[1]))
	if h, _ := os.ReadFile(filepath.Join(r.dir, "report.html")); !strings.Contains(html.UnescapeString(string(h)), line) {
		t.Errorf("report.html does not print the replay line of junit.xml: %s", line)
	}
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GWCONFORM_FLEET=") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+path)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "GWCONFORM_FLEET") || !strings.Contains(string(out), filepath.Base(fleetFile)) {
		t.Errorf("the replay line without GWCONFORM_FLEET: %v\n%s\n%s", err, line, out)
	}
	cmd = exec.Command("bash", "-c", line)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+path, "GWCONFORM_FLEET="+fleetFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the replay line as pasted: %v\n%s\n%s", err, line, out)
	}
}
