package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Replay and curl lines reproduce the check: every kind of failing check
// (a sign wrong in one digit, an unknown api_key, a stale timestamp, a
// malformed body, an effect the observer shows) is run against a double
// with the bugs, then replayed from the report against that double
// (REPRODUCED, exit 0) and against the faithful one (CHANGED, exit 1),
// through real HTTP; each refusal's curl line gets the buggy answer from
// the one and the refusal from the other.

// replayBugs is a double with one bug per kind of check: the sign is
// compared on its first 16 characters only, an unknown api_key is let
// through, the timestamp window is not kept, a malformed body is
// accepted, and a rename answers success but keeps the old name.
func replayBugs(t *testing.T) (api, reads string) {
	t.Helper()
	it := newIndepTarget(indepDeviation{renameKeepsOld: true})
	it.window = 0
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		b := string(body)
		if k := keyInRaw.FindStringSubmatch(b); k != nil && strings.HasPrefix(k[2], "unknown-") {
			success(w, r)
			return
		}
		ts, sg := tsInBody.FindStringSubmatch(b), signInRaw.FindStringSubmatch(b)
		if ts != nil && sg != nil {
			sum := md5.Sum([]byte(indepKey + indepSecret + ts[2]))
			if right := hex.EncodeToString(sum[:]); strings.EqualFold(right[:16], sg[2][:16]) {
				b = strings.Replace(b, sg[0], sg[1]+right, 1)
			}
		}
		rec := httptest.NewRecorder()
		r.Body = io.NopCloser(strings.NewReader(b))
		it.api(rec, r)
		if rec.Code == 400 && strings.Contains(rec.Body.String(), "malformed_body") {
			success(w, r)
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	rd := httptest.NewServer(http.HandlerFunc(it.reads))
	t.Cleanup(a.Close)
	t.Cleanup(rd.Close)
	return a.URL, rd.URL
}

func faithfulDouble(t *testing.T) (api, reads string) {
	t.Helper()
	it := newIndepTarget(indepDeviation{})
	a, rd := httptest.NewServer(http.HandlerFunc(it.api)), httptest.NewServer(http.HandlerFunc(it.reads))
	t.Cleanup(a.Close)
	t.Cleanup(rd.Close)
	return a.URL, rd.URL
}

func TestReplayJudgesAsTheCheckDid(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	bugAPI, bugReads := replayBugs(t)
	okAPI, okReads := faithfulDouble(t)
	fleetFile := indepFleetFile(t, indepKey, indepSecret)
	ids := []string{
		"command.sign.position-18.json",                      // the sign wrong in one digit
		"message.envelope.api_key.unknown.xml",               // a key of no account
		"update_name.envelope.timestamp.stale.json.contract", // a day-old timestamp
		"update_name.body.truncated.json",                    // a malformed body
		"effect.update_name.light-dimmer.stored.json",        // what the observer shows
	}
	args := []string{"--target", bugAPI, "--observer", bugReads, "--fleet", fleetFile, "--allow-partial"}
	for _, id := range ids {
		args = append(args, "--check", id)
	}
	r := gwconform(t, args...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	// What a vendor reads (go test -v shows it): the console's failures,
	// then each replay below.
	t.Logf("gwconform run against the buggy double:\n%s", r.stdout)
	reportFile := filepath.Join(r.dir, "report.json")
	doc, err := loadReport(reportFile)
	if err != nil {
		t.Fatal(err)
	}
	// The effect failure shows the observer's reads before and after its
	// request, each with a curl line that reads it again.
	eff, _ := doc.Result("effect.update_name.light-dimmer.stored.json")
	var when []string
	for _, o := range eff.Reads {
		when = append(when, o.When)
		out, err := exec.Command("bash", "-c", o.Curl()).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"sn"`) || !strings.HasPrefix(o.URL, bugReads+"/_sim/gateways/") {
			t.Errorf("the read's curl line %s: %v\n%s", o.Curl(), err, out)
		}
	}
	if w := strings.Join(when, " "); !strings.HasPrefix(w, "before") || !strings.HasSuffix(w, "after") || !strings.Contains(r.stdout, "observer: before the request {\"name\":\"Hall\"") ||
		!strings.Contains(r.stdout, "observer: after the request {\"name\":\"Hall\"") {
		t.Errorf("the effect failure's reads: %q\n%s", when, r.stdout)
	}
	if page, _ := os.ReadFile(filepath.Join(r.dir, "report.html")); !strings.Contains(string(page), "What the observer showed") {
		t.Errorf("report.html's effect card shows no read of the observer")
	}
	path := filepath.Dir(bins.gwconform) + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, id := range ids {
		res, ok := doc.Result(id)
		if !ok || res.Outcome != report.Failed {
			t.Fatalf("%s: %s against the buggy double, want failed: %s", id, res.Outcome, res.Failure+res.Reason)
		}
		for _, c := range []struct {
			name, api, reads string
			exit             int
			verdict          string
		}{
			{"buggy", bugAPI, bugReads, 0, "REPRODUCED"},
			{"faithful", okAPI, okReads, 1, "CHANGED"},
		} {
			cmd := exec.Command(bins.gwconform, "replay", reportFile, id, "--target", c.api, "--observer", c.reads)
			cmd.Env = append(os.Environ(), "GWCONFORM_FLEET="+fleetFile)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("gwconform replay %s against the %s double (exit %d):\n%s", id, c.name, code, out.String())
			last := strings.TrimSpace(out.String())
			last = last[strings.LastIndex(last, "\n")+1:]
			if code != c.exit || !strings.HasPrefix(last, c.verdict+":") {
				t.Errorf("%s replayed against the %s double: exit %d, last line %q; want exit %d and %s\n%s", id, c.name, code, last, c.exit, c.verdict, out.String())
			}
			if o := out.String(); strings.HasPrefix(id, "effect.") && (!strings.Contains(o, "observer, before the request: ") ||
				!strings.Contains(o, "observer, after the request: ") || !strings.Contains(o, "curl -sS '"+c.reads+"/_sim/gateways/")) {
				t.Errorf("%s: the replay against the %s double does not show the observer's reads before and after:\n%s", id, c.name, o)
			}
		}
		if strings.HasPrefix(id, "effect.") {
			continue
		}
		// The refusal's curl line, as report.html prints it, sent to each
		// double: the buggy one answers as in the run, the faithful one
		// refuses.
		ex := res.Exchanges[len(res.Exchanges)-1]
		curl := ex.CurlSignedWith("fleet.yaml")
		if id == "command.sign.position-18.json" && !strings.Contains(curl, "--sign-at") {
			t.Errorf("%s: the curl line signs the request validly: %s", id, curl)
		}
		for _, c := range []struct {
			name, api string
			want      int
		}{{"buggy", bugAPI, ex.Status}, {"faithful", okAPI, 0}} {
			line := strings.ReplaceAll(curl, strings.TrimSuffix(doc.Target, "/"), c.api)
			cmd := exec.Command("bash", "-c", line)
			cmd.Env = append(os.Environ(), "PATH="+path, "GWCONFORM_FLEET="+fleetFile)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: the curl line failed: %v\n%s\n%s", id, err, line, out)
			}
			m := regexp.MustCompile(`HTTP/1\.1 (\d+)`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("%s: no status in the curl output:\n%s", id, out)
			}
			got := string(m[1])
			if c.want != 0 && got != strconv.Itoa(c.want) || c.want == 0 && (got == "200" || got == strconv.Itoa(ex.Status)) {
				t.Errorf("%s: the curl line against the %s double got %s; the run got %d\n%s", id, c.name, got, ex.Status, out)
			}
		}
	}
	// Without GWCONFORM_FLEET, a line of a run that read a fleet file
	// sends nothing and names the file.
	res, _ := doc.Result(ids[0])
	cmd := exec.Command("bash", "-c", res.Exchanges[len(res.Exchanges)-1].CurlSignedWith("fleet.yaml"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GWCONFORM_FLEET=") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+path)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "GWCONFORM_FLEET") || !strings.Contains(string(out), "fleet.yaml") {
		t.Errorf("a line without GWCONFORM_FLEET: %v\n%s", err, out)
	}
}

// TestSignPositionsAreOneFinding: a target that compares only the first
// 16 characters of the sign fails the sign checks of positions 17 to 32;
// the console and report.html state that cause once, list the sixteen
// checks under it, and each card shows the digit the check changed.
func TestSignPositionsAreOneFinding(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	api, reads := replayBugs(t)
	r := gwconform(t, "--target", api, "--observer", reads, "--fleet", indepFleetFile(t, indepKey, indepSecret),
		"--check", "*.sign.position-*", "--allow-partial")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	const cause = "only the first 16 characters of the sign are compared"
	line := lineWith(r.stdout, cause)
	if line == "" || !strings.Contains(r.stdout, "16 checks: ") || !strings.Contains(r.stdout, "Findings (failures that share a cause): 1") {
		t.Errorf("the console states no finding %q with its 16 checks:\n%s", cause, r.stdout)
	}
	if !regexp.MustCompile(`sent: +on purpose: the sign is the valid one with its character (1[7-9]|2[0-9]|3[0-2]) of 32 changed to "[0-9a-f]"`).MatchString(r.stdout) {
		t.Errorf("no failure block shows the changed digit:\n%s", r.stdout)
	}
	page, err := os.ReadFile(filepath.Join(r.dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(page); !strings.Contains(s, cause) || strings.Count(s, `<a href="#c-`) < 16 || !regexp.MustCompile(`changed to (&#34;|")[0-9a-f]`).MatchString(s) {
		i := strings.Index(s, "on purpose")
		t.Errorf("report.html states no finding, or shows no changed digit: %v %d %q", strings.Contains(s, cause), strings.Count(s, `<a href="#c-`), s[max(0, i-50):min(len(s), i+200)])
	}
}
