package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The pre-flight never hides a bug: a valid request the target refuses
// (or answers with something other than the success body) is the
// target's failure, judged by the run (exit 1, every report written, the
// console's first lines naming it); only a cause in the set-up stops the
// run with exit 2 before any check.

// buggy serves the independent implementation with one bug: bug answers
// the requests it wants to (and says so); the rest go to the faithful
// implementation. Its reads are the faithful target's.
func buggy(t *testing.T, bug bugFunc) (api, reads string) {
	t.Helper()
	it := newIndepTarget(indepDeviation{})
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bug(w, r, body, it.api) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		it.api(w, r)
	}))
	rd := httptest.NewServer(http.HandlerFunc(it.reads))
	t.Cleanup(a.Close)
	t.Cleanup(rd.Close)
	return a.URL, rd.URL
}

// bugFunc answers a request the buggy way and says so, or leaves it to
// next, the faithful implementation (which it may call itself).
type bugFunc func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool

func isXML(r *http.Request) bool { return strings.Contains(r.Header.Get("Content-Type"), "xml") }

func answerRefusal(w http.ResponseWriter, r *http.Request, status int, code, field string) {
	if isXML(r) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		io.WriteString(w, `<xml><status>error</status><error><code>`+code+`</code><field>`+field+`</field><message>refused</message></error></xml>`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, `{"status":"error","error":{"code":"`+code+`","field":"`+field+`","message":"refused"}}`)
}

// TestPreflightRefusedValidRequestIsAFailureNotASetup: each target has one
// bug that refuses a valid pre-flight request. The run goes on: exit 1,
// verdict FAIL, every report written, that check failed at its level, the
// refusals that need it as their control inconclusive, and the console's
// first line names the refused request and its answer.
func TestPreflightRefusedValidRequestIsAFailureNotASetup(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		bug  bugFunc
		// check narrows the run to the valid checks and refusals that
		// need them as their control; failed must be failed MUST checks;
		// line is what the first console line says.
		checks       []string
		failed       []string
		line         []string
		inconclusive bool
	}{
		{"a valid dimmer command refused", func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool {
			if bytes.Contains(body, []byte("Light Dimmer")) && strings.HasSuffix(r.URL.Path, "/command") {
				answerRefusal(w, r, 400, "invalid_field", "dimming")
				return true
			}
			return false
		}, []string{"command.light-dimmer.*"}, []string{"command.light-dimmer.valid.json", "command.light-dimmer.valid.xml"},
			[]string{"command to Light Dimmer", "refused (HTTP 400, status error, error invalid_field (dimming))"}, true},
		{"a success answered Success", func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool {
			rec := httptest.NewRecorder()
			next(rec, r)
			out := rec.Body.String()
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			if rec.Code == 200 {
				out = strings.Replace(out, "success", "Success", 1)
			}
			io.WriteString(w, out)
			return true
		}, []string{"command.light-dimmer.*"}, []string{"command.light-dimmer.valid.json", "command.light-dimmer.valid.xml"},
			[]string{"answered HTTP 200, status Success instead of status success"}, true},
		{"XML thermostat points misnamed", func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool {
			if isXML(r) && bytes.Contains(body, []byte("<cooling_point>")) {
				answerRefusal(w, r, 400, "missing_field", "cooling-point")
				return true
			}
			return false
		}, []string{"command.thermostat.valid*", "command.thermostat.fan.*"}, []string{"command.thermostat.valid.xml"},
			[]string{"command to Thermostat", "in xml was refused", "missing_field (cooling-point)"}, true},
		{"rename refused in XML", func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool {
			if isXML(r) && strings.HasSuffix(r.URL.Path, "/update_name") {
				answerRefusal(w, r, 400, "invalid_field", "name")
				return true
			}
			return false
		}, []string{"update_name.valid*", "update_name.structure.*"}, []string{"update_name.valid.xml"},
			[]string{"update_name of", "in xml was refused", "invalid_field (name)"}, true},
		{"every valid XML message answered 500", func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool {
			if isXML(r) && strings.HasSuffix(r.URL.Path, "/message") && bytes.Contains(body, []byte("<message_type>message<")) {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, `<xml><status>error</status><error><code>internal</code><message>boom</message></error></xml>`)
				return true
			}
			return false
		}, []string{"message.valid.*"}, []string{"message.valid.xml"},
			[]string{"message", "server error (HTTP 500"}, false},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			api, reads := buggy(t, c.bug)
			args := []string{"--target", api, "--observer", reads, "--fleet", indepFleetFile(t, indepKey, indepSecret), "--allow-partial"}
			for _, id := range c.checks {
				args = append(args, "--check", id)
			}
			r := gwconform(t, args...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1 (a failure, not a set-up problem)\nstderr: %s\n%s", r.code, r.stderr, tail(r.stdout))
			}
			first := strings.SplitN(r.stdout, "\n", 2)[0]
			if !strings.HasPrefix(first, "gwconform: pre-flight: the valid ") {
				t.Errorf("the console's first line does not name the refused request: %q", first)
			}
			for _, w := range c.line {
				if !strings.Contains(first, w) {
					t.Errorf("the first line does not say %q: %q", w, first)
				}
			}
			d := readIndepDoc(t, r.dir)
			if d.Verdict != "FAIL" {
				t.Errorf("verdict %s, want FAIL", d.Verdict)
			}
			out := d.outcomes()
			for _, id := range c.failed {
				if out[id] != "failed" {
					t.Errorf("%s: %s, want failed", id, out[id])
				}
			}
			if c.inconclusive && d.Summary.Inconclusive == 0 {
				t.Error("no refusal check is inconclusive, though its control was refused")
			}
			for _, f := range []string{"report.json", "report.html", "junit.xml"} {
				if _, err := os.Stat(filepath.Join(r.dir, f)); err != nil {
					t.Errorf("%s not written: %v", f, err)
				}
			}
			b, _ := os.ReadFile(filepath.Join(r.dir, "report.json"))
			if !bytes.Contains(b, []byte(`"preflight"`)) {
				t.Error("report.json has no preflight line")
			}
		})
	}
}

// TestPreflightChecksEveryKeyOfTheFleet: a wrong secret on the second
// account is the fleet file's fault: exit 2 before any check, one line
// naming that key (masked) and its account, no report.
func TestPreflightChecksEveryKeyOfTheFleet(t *testing.T) {
	t.Parallel()
	api, reads := newIndepTarget(indepDeviation{}).serve(t)
	yaml := strings.Replace(indepFleetYAML(indepKey, indepSecret), indepSecretB, "not-the-secret-b", 1)
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := gwconform(t, "--target", api, "--observer", reads, "--fleet", p)
	line := strings.TrimSpace(r.stderr)
	if r.code != 2 || strings.Contains(line, "\n") {
		t.Fatalf("exit %d, want 2 and one line; stderr:\n%s\n%s", r.code, r.stderr, tail(r.stdout))
	}
	for _, w := range []string{"bad_signature", "check the secret of api_key vend… of account " + indepAccountB} {
		if !strings.Contains(line, w) {
			t.Errorf("the line does not say %q: %s", w, line)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "not-the-secret-b") || strings.Contains(r.stdout+r.stderr, indepKeyB) {
		t.Error("the output carries the secret or the whole key")
	}
	if _, err := os.Stat(filepath.Join(r.dir, "report.json")); err == nil {
		t.Error("a report was written: some check ran")
	}
}

// TestRefusedRenamesAndEscapedNamesAreReadBack: the effects of item 6 are
// read back. A target that applies a refused rename anyway fails
// effect.update_name.refused-kept; one that stores a JSON name's \u
// escapes as written fails effect.update_name.unicode-escapes; the
// faithful target passes both.
func TestRefusedRenamesAndEscapedNamesAreReadBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		bug    bugFunc
		failed []string
	}{
		{"faithful", func(http.ResponseWriter, *http.Request, []byte, http.HandlerFunc) bool { return false }, nil},
		{"a refused rename applied anyway", func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool {
			long := strings.Repeat("n", 65)
			if !strings.HasSuffix(r.URL.Path, "/update_name") || !bytes.Contains(body, []byte(long)) {
				return false
			}
			// The name is changed first, then the request refused.
			hijack := r.Clone(r.Context())
			hijack.Body = io.NopCloser(bytes.NewReader(bytes.Replace(body, []byte(long), []byte("Hijacked"), 1)))
			next(httptest.NewRecorder(), hijack)
			return false
		}, []string{"effect.update_name.refused-kept.json", "effect.update_name.refused-kept.xml"}},
		{"escapes stored as written", func(w http.ResponseWriter, r *http.Request, body []byte, next http.HandlerFunc) bool {
			if !strings.HasSuffix(r.URL.Path, "/update_name") || !bytes.Contains(body, []byte(`\u`)) {
				return false
			}
			r.Body = io.NopCloser(bytes.NewReader(bytes.ReplaceAll(body, []byte(`\u`), []byte(`\\u`))))
			next(w, r)
			return true
		}, []string{"effect.update_name.unicode-escapes.json"}},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			api, reads := buggy(t, c.bug)
			r := gwconform(t, "--target", api, "--observer", reads, "--fleet", indepFleetFile(t, indepKey, indepSecret),
				"--check", "effect.update_name.*", "--allow-partial", "--fail-on", "should")
			out := readIndepDoc(t, r.dir).outcomes()
			for _, id := range []string{"effect.update_name.refused-kept.json", "effect.update_name.refused-kept.xml", "effect.update_name.unicode-escapes.json"} {
				want := "passed"
				for _, f := range c.failed {
					if f == id {
						want = "failed"
					}
				}
				if out[id] != want {
					t.Errorf("%s: %s, want %s\n%s", id, out[id], want, tail(r.stdout))
				}
			}
		})
	}
}
