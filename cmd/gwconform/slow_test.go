package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
)

// TestSlowDeviceIsJudgedAndTheRunEndsInTime: every request of the
// interface naming the Light Dimmer is answered after 1.5 s, and the
// dimmer accepts dimming 101. The run judges it as a fast target is
// judged (the 101 checks fail, nothing else does), the failures found
// while its checks were sent concurrently are confirmed alone, progress
// names the slow device and its median answer, and the whole run ends
// within the 2 minutes runGwconform allows.
func TestSlowDeviceIsJudgedAndTheRunEndsInTime(t *testing.T) {
	t.Parallel()
	f := fleet.Demo()
	var sn string
	for _, d := range f.Accounts[0].Gateways[0].Devices {
		if d.Type == "Light Dimmer" {
			sn = d.SN
		}
	}
	h := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Server.Handler()
	deviant := regexp.MustCompile(`"dimming":"101"|<dimming>101</dimming>`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if !strings.HasPrefix(r.URL.Path, "/_sim/") && bytes.Contains(bytes.ToLower(body), []byte(strings.ToLower(sn))) {
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		if deviant.Match(body) {
			success(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	r := gwconform(t, "--target", srv.URL)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (dimming 101 is accepted)\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	got := failed(reports(t, r.dir))
	for _, id := range []string{"command.light-dimmer.dimming.101.json", "command.light-dimmer.dimming.101.xml"} {
		if got[id] != "MUST" {
			t.Errorf("%s did not fail", id)
		}
	}
	for id, level := range got {
		if level == "MUST" && !strings.Contains(id, "dimming.101") {
			t.Errorf("%s failed (MUST) against a target whose one fault is dimming 101", id)
		}
	}
	if !regexp.MustCompile(`slow device Light Dimmer ` + sn + `: median answer 1\.[45]`).MatchString(r.stdout) {
		t.Errorf("the progress does not name the slow device and its median answer:\n%s", tail(r.stdout))
	}
	t.Logf("a whole run against a target whose Light Dimmer answers after 1.5 s: %s", r.took.Round(time.Second))
}
