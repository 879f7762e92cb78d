package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// hostileText is what a hostile target puts in every field it answers:
// a title change, a colour, a screen clear, a bell.
const hostileText = "\x1b]0;pwned\x07\x1b[31mred\x1b[2J\x9b1m"

// hostileTarget answers with an error whose code, field and message
// carry terminal escapes: every request ("all"), the XML ones ("xml"), or
// every POST after the first 30 ("later"); it passes the others on to a
// faithful simulator.
func hostileTarget(t *testing.T, mode string) string {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hostile := mode == "all"
		switch mode {
		case "xml":
			hostile = bytes.HasPrefix(bytes.TrimSpace(body), []byte("<"))
		case "later":
			hostile = r.Method == http.MethodPost && posts.Add(1) > 30
		}
		if !hostile {
			proxyTo(w, r, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"status":"error","error":{"code":"`+jsonEscape(hostileText)+`","field":"`+jsonEscape(hostileText)+`","message":"`+jsonEscape(hostileText)+`"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var faithful string

func proxyTo(w http.ResponseWriter, r *http.Request, body []byte) {
	req, _ := http.NewRequest(r.Method, faithful+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	io.Copy(w, res.Body)
}

func jsonEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			b.WriteString(`\u00` + "0123456789abcdef"[r>>4:r>>4+1] + "0123456789abcdef"[r&15:r&15+1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// rawControl finds a raw escape, bell or C1 control in out.
func rawControl(out string) string {
	for i, r := range out {
		if r == 0x1b || r == 0x07 || r >= 0x80 && r < 0xa0 {
			return out[max(0, i-60):min(len(out), i+20)]
		}
	}
	return ""
}

// TestConsoleEscapesAHostileTarget: every console line of gwconform run
// (the pre-flight's lines and its refusal) and of gwconform explore (its
// errors and the putting back of the devices) shows a hostile target's
// escapes as text, never raw.
func TestConsoleEscapesAHostileTarget(t *testing.T) {
	faithful = startSim(t, fleet.Demo()).URL()
	for _, tc := range []struct {
		name string
		args []string
	}{
		// Every kind of check, a family each, rather than the whole suite:
		// each line quotes the answer the same way whatever the family.
		{"run, every valid request refused", []string{"run", "--target", hostileTarget(t, "all"), "--report-dir", t.TempDir(),
			"--check", "command.light-dimmer.*", "--check", "message.message_type.*", "--check", "update_name.name.*",
			"--check", "effect.*", "--check", "probe.*", "--check", "fleet.*", "--check", "*.structure.*", "--allow-partial"}},
		{"run, the XML ones refused", []string{"run", "--target", hostileTarget(t, "xml"), "--report-dir", t.TempDir(),
			"--check", "probe.device_id-alias.json", "--allow-partial"}},
		{"explore", []string{"explore", "--target", hostileTarget(t, "all"), "--operations", "20", "--report-dir", t.TempDir()}},
		{"explore, the XML ones refused", []string{"explore", "--target", hostileTarget(t, "xml"), "--operations", "40", "--report-dir", t.TempDir()}},
		{"explore, the devices not put back", []string{"explore", "--target", hostileTarget(t, "later"), "--operations", "40", "--report-dir", t.TempDir()}},
	} {
		r := runCommand(t, nil, tc.args...)
		all := r.stdout + r.stderr
		if raw := rawControl(all); raw != "" {
			t.Errorf("%s (exit %d) printed a raw control: %q", tc.name, r.code, raw)
		}
		if testing.Verbose() {
			t.Logf("%s (exit %d) printed:\n%s", tc.name, r.code, all)
		}
	}
}
