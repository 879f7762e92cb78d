package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/xml"
	"hash/crc32"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// MaxReportBytesPerCheck bounds a run's report files together
// (report.Writers), by the checks of the catalog: a run with hundreds of
// failures or inconclusive checks keeps each one's exchanges and reason,
// and every check has its row in report.json and its test case in
// junit.xml. With 4,721 checks: 1.37 MB against the embedded simulator,
// 2.50 MB for 314 failures, 2.53 MB for 128 failures and 1,115
// inconclusive checks (every message refused).
const MaxReportBytesPerCheck = 560

// maxReportBytes is the bound of the run's report files together.
func maxReportBytes() int64 { return MaxReportBytesPerCheck * int64(len(conformance.Checks())) }

// manyFailures is a target that accepts about six in ten invalid XML
// messages (which ones follows from the body, its timestamp and sign left
// out): some 300 checks fail, with their exchanges.
func manyFailures(t *testing.T) string {
	volatile := regexp.MustCompile(`<(timestamp|sign)>[^<]*</(timestamp|sign)>`)
	return faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.URL.Path != device.SendMessage.Path() || !strings.Contains(r.Header.Get("Content-Type"), "xml") {
			return false
		}
		if crc32.ChecksumIEEE(volatile.ReplaceAll(body, nil))%10 < 4 {
			return false
		}
		success(w, r)
		return true
	})
}

// messagesRefused is a target that refuses every message request with a
// 409 and an error body in the request's format: each message check fails
// or, a refusal check whose valid request is refused too, proves nothing
// (inconclusive). A 4xx, so that the run is not stopped by 20 5xx in a
// row and every check is judged.
func messagesRefused(t *testing.T) string {
	return faulty(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.URL.Path != device.SendMessage.Path() {
			return false
		}
		f := device.JSON
		if strings.Contains(r.Header.Get("Content-Type"), "xml") {
			f = device.XML
		}
		w.Header().Set("Content-Type", codec.ContentType(f))
		w.WriteHeader(http.StatusConflict)
		w.Write(codec.Error(f, device.Errorf("busy", "", "messages are not taken now")))
		return true
	})
}

// TestReportFilesStayBounded: the report files of a run against the
// embedded simulator, and of a run with some 300 failures, stay under
// maxReportBytes together, and still hold what a vendor needs
// of every failure: in report.json (read back whole) its exchanges, and
// its assertion as the catalog has it, with the sentence of the texts it
// quotes; in report.html its card, drawn or packed, with the assertion and
// the replay line; in junit.xml its test case with a message, what was
// expected and the replay line. The sizes are logged (go test -v -run
// TestReportFilesStayBounded).
func TestReportFilesStayBounded(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	catalog := map[string]string{}
	for _, m := range conformance.Checks() {
		catalog[m.ID] = m.Assertion
	}
	for _, c := range []struct {
		name        string
		args        []string
		minFailures int
		// minInconclusive: refusal checks whose valid request was refused
		// too, which prove nothing (report.Inconclusive).
		minInconclusive int
	}{
		{"embedded simulator", []string{"--seed", "7"}, 0, 0},
		{"300 failures", []string{"--seed", "7", "--target", manyFailures(t)}, 300, 0},
		// Every message refused: failures, and hundreds of refusal
		// checks that prove nothing. gwsim with
		// operation_error_rates {"message": 1} made 2.5 MB of reports (765
		// inconclusive, 917 not reached) before report.json wrote skipped
		// and inconclusive checks without what the catalog says of them
		// , 1.9 MB since.
		{"every message refused", []string{"--seed", "7", "--target", messagesRefused(t)}, 20, 100},
	} {
		r := gwconform(t, c.args...)
		if r.code > 1 {
			t.Fatalf("%s: exit %d\n%s%s", c.name, r.code, tail(r.stdout), r.stderr)
		}
		total := int64(0)
		var sizes []string
		files := map[string]string{}
		for _, w := range report.Writers {
			b, err := os.ReadFile(filepath.Join(r.dir, w.File))
			if err != nil {
				t.Fatal(err)
			}
			files[w.File] = string(b)
			total += int64(len(b))
			sizes = append(sizes, w.File+" "+itoa(int64(len(b))))
		}
		doc, err := report.Read([]byte(files[report.JSONFile]), conformance.Catalog())
		if err != nil {
			t.Fatalf("%s: report.json: %v", c.name, err)
		}
		doc.Files.JSON = filepath.Join(r.dir, report.JSONFile)
		if len(doc.Results) != len(conformance.Checks()) {
			t.Errorf("%s: report.json reads back %d results, want one per check (%d)", c.name, len(doc.Results), len(conformance.Checks()))
		}
		cards := htmlCards(t, files[report.HTMLFile])
		junit := junitCases(t, files[report.JUnitFile])
		failed := 0
		for _, res := range doc.Results {
			if res.Outcome != report.Failed {
				continue
			}
			failed++
			if len(res.Exchanges) == 0 && !strings.HasPrefix(res.ID, "effect.") {
				t.Errorf("%s: %s failed but report.json has no exchange of it", c.name, res.ID)
			}
			if want := catalog[res.ID]; res.Assertion != want {
				t.Errorf("%s: %s reads back with the assertion %q, want %q", c.name, res.ID, res.Assertion, want)
			}
			card := cards["c-"+res.ID]
			if !strings.Contains(card, html.EscapeString(res.Assertion)) && !strings.Contains(card, strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(res.Assertion)) {
				t.Errorf("%s: report.html has no card of %s with its assertion", c.name, res.ID)
			}
			if len(res.Exchanges) > 0 && !strings.Contains(card, report.ReplayLine(doc, res.ID)) {
				t.Errorf("%s: the card of %s has no replay line", c.name, res.ID)
			}
			tc, ok := junit[res.ID]
			if !ok || tc.message == "" || !strings.Contains(tc.text, "expected: ") || len(res.Exchanges) > 0 && !strings.Contains(tc.text, "reproduce: "+report.ReplayLine(doc, res.ID)) {
				t.Errorf("%s: junit.xml's test case of %s lacks its message, what was expected or the replay line: %+v", c.name, res.ID, tc)
			}
		}
		inconclusive := 0
		for _, res := range doc.Results {
			if res.Outcome == report.Inconclusive {
				inconclusive++
			}
			if (res.Outcome == report.Skipped || res.Outcome == report.Inconclusive) && res.Assertion != catalog[res.ID] {
				t.Errorf("%s: the %s check %s reads back with the assertion %q, want the catalog's %q", c.name, res.Outcome, res.ID, res.Assertion, catalog[res.ID])
			}
		}
		t.Logf("%s: %d failures, %d inconclusive: %s: %d bytes in all", c.name, failed, inconclusive, strings.Join(sizes, ", "), total)
		if inconclusive < c.minInconclusive {
			t.Errorf("%s: %d inconclusive checks, want at least %d", c.name, inconclusive, c.minInconclusive)
		}
		if failed < c.minFailures {
			t.Errorf("%s: %d failures, want at least %d", c.name, failed, c.minFailures)
		}
		if total >= maxReportBytes() {
			t.Errorf("%s: the report files take %d bytes together (%s), want under %d (%d a check)", c.name, total, strings.Join(sizes, ", "), maxReportBytes(), MaxReportBytesPerCheck)
		}
	}
}

// htmlCards are the failure cards of a report.html, drawn or packed (gzip
// in base64, as the page's script unpacks them), by their id.
func htmlCards(t *testing.T, page string) map[string]string {
	t.Helper()
	parts := []string{page}
	for _, m := range regexp.MustCompile(`<script type="application/octet-stream" id="more-failures-data">([^<]*)</script>`).FindAllStringSubmatch(page, -1) {
		z, err := base64.StdEncoding.DecodeString(strings.TrimSpace(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		gz, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(gz)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	cards := map[string]string{}
	card := regexp.MustCompile(`(?s)<section class="failure[^"]*" id="([^"]+)">.*?</section>`)
	for _, p := range parts {
		for _, m := range card.FindAllStringSubmatch(p, -1) {
			cards[m[1]] = m[0]
		}
	}
	return cards
}

// junitCase is what a JUnit test case says of a check that did not pass.
type junitCase struct{ message, text string }

// junitCases are a junit.xml's test cases that did not pass, by name.
func junitCases(t *testing.T, b string) map[string]junitCase {
	t.Helper()
	type msg struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	var doc struct {
		Cases []struct {
			Name      string `xml:"name,attr"`
			Failure   *msg   `xml:"failure"`
			Error     *msg   `xml:"error"`
			Skipped   *msg   `xml:"skipped"`
			SystemErr string `xml:"system-err"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal([]byte(b), &doc); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	out := map[string]junitCase{}
	for _, c := range doc.Cases {
		switch {
		case c.Failure != nil:
			out[c.Name] = junitCase{c.Failure.Message, c.Failure.Text}
		case c.Error != nil:
			out[c.Name] = junitCase{c.Error.Message, c.Error.Text}
		case c.Skipped != nil:
			out[c.Name] = junitCase{c.Skipped.Message, c.SystemErr}
		}
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
