package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestBannerNamesHardening: the banner says when --rate-limit and
// --reject-replays are set (an app's 429s and 401s come from them), and
// says nothing of them when they are not.
func TestBannerNamesHardening(t *testing.T) {
	_, plain, _, _ := serve(t)
	if strings.Contains(plain.String(), "hardening") {
		t.Errorf("a banner without --rate-limit or --reject-replays names hardening:\n%s", plain)
	}
	_, out, _, _ := serve(t, "--rate-limit", "4", "--reject-replays")
	for _, want := range []string{"--rate-limit 4: at most 4 operation requests a second", "429 rate_limited", "--reject-replays", "401 replayed_request"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
}

// TestAdminAnswersWithoutAScenarioAndShowsRetryAfter: GET /_sim/scenario
// on a gwsim serve without --scenario says that no scenario is loaded
// (not that the call does not exist); GET /_sim/faults always shows the
// retry_after the injected errors carry, set or not.
func TestAdminAnswersWithoutAScenarioAndShowsRetryAfter(t *testing.T) {
	url, _, _, _ := serve(t)
	c := simtest.NewClient(t, url)
	status, _, body := c.Admin(http.MethodGet, "/_sim/scenario", "")
	if status != http.StatusNotFound || !strings.Contains(string(body), "no scenario is loaded") || !strings.Contains(string(body), "--scenario") {
		t.Errorf("GET /_sim/scenario without one: %d %s", status, body)
	}
	if status, _, body := c.Admin(http.MethodPost, "/_sim/scenario/start", ""); status != http.StatusNotFound || !strings.Contains(string(body), "no scenario is loaded") {
		t.Errorf("POST /_sim/scenario/start without one: %d %s", status, body)
	}
	for _, tc := range []struct{ put, want string }{{"", "1"}, {`{"retry_after":"none"}`, "none"}, {`{"retry_after":"3"}`, "3"}, {`{}`, "1"}} {
		if tc.put != "" {
			c.AdminJSON(http.MethodPut, "/_sim/faults", tc.put, nil)
		}
		_, _, b := c.Admin(http.MethodGet, "/_sim/faults", "")
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f["retry_after"] != tc.want {
			t.Errorf("after PUT %s: GET /_sim/faults retry_after %v, want %q: %s", tc.put, f["retry_after"], tc.want, b)
		}
	}
}
