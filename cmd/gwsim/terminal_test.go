package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostileBytes are what a target or an app can put in an error code or a
// message to take over a terminal: set its title, recolour it, clear the
// line, return to its start.
const hostileBytes = "\x1b]0;owned\x07\x1b[31mred\x1b[2K\rclean\u009b"

func noControl(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		if strings.Contains(out, c) {
			t.Errorf("%s passes %q to the terminal:\n%q", what, c, out)
		}
	}
	if !strings.Contains(out, `\x1b]0;owned\a\x1b[31mred`) {
		t.Errorf("%s does not show the target's bytes escaped:\n%s", what, out)
	}
}

// TestSendEscapesTheTargetsBytes: gwsim send against a target whose error
// answer carries escape sequences, in its code, message, a header and its
// status line, shows them escaped, on stdout and stderr.
func TestSendEscapesTheTargetsBytes(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Note", hostileBytes)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "{\"status\":\"error\",\"error\":{\"code\":\""+strings.ReplaceAll(strings.ReplaceAll(hostileBytes, "\x1b", `\u001b`), "\x07", `\u0007`)+"\",\n\"message\":\"\x1b[8mhidden\"}}")
	}))
	t.Cleanup(target.Close)
	code, out, errOut := run("send", "command", "--target", target.URL, "--type", "Light Dimmer", "--sn", demoDimmer, "dimming=40")
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	noControl(t, "gwsim send's stdout", out)
	noControl(t, "gwsim send's stderr", errOut)
}

// TestClientsEscapesTheAppsBytes: gwsim clients --format text reading a
// report whose client name, error code and message carry escape
// sequences (what an app sent, relayed by a proxy) shows them escaped.
func TestClientsEscapesTheAppsBytes(t *testing.T) {
	esc := strings.NewReplacer("\x1b", `\u001b`, "\x07", `\u0007`, "\r", `\r`).Replace(hostileBytes)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"clients":[{"client":"`+esc+`","requests":1,"errors":[{"status":400,"code":"`+esc+`","count":1,
			"latest":{"operation":"send_command","message":"`+esc+`"}}]}]}`)
	}))
	t.Cleanup(srv.Close)
	code, out, errOut := run("clients", "--target", srv.URL, "--format", "text")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	noControl(t, "gwsim clients", out+errOut)
}
