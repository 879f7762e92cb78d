package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

func usageDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "usage.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUsageBannerSample: the banner sample of docs/usage.md is what
// gwsim serve prints with its defaults (the demo fleet, no token, on
// loopback): each line of the sample is a line of the banner, in order
// ("…" stands for lines left out), and every line of the banner before
// its devices is in the sample.
func TestUsageBannerSample(t *testing.T) {
	_, rest, ok := strings.Cut(usageDoc(t), "```text\ngwsim listening on")
	if !ok {
		t.Fatal("docs/usage.md has no banner sample (```text, gwsim listening on)")
	}
	sample, _, _ := strings.Cut("gwsim listening on"+rest, "```")
	t.Setenv("GWSIM_ADMIN_TOKEN", "") // the defaults: no token
	url, out, _, _ := serve(t)
	banner := strings.ReplaceAll(out.String(), url, "http://127.0.0.1:8080")
	var lines []string
	for _, l := range strings.Split(banner, "\n") {
		if strings.HasPrefix(l, "time=") || l == "" {
			continue // the log, which the sample leaves out
		}
		lines = append(lines, l)
	}
	i := 0
	for _, want := range strings.Split(strings.TrimSpace(sample), "\n") {
		if strings.TrimSpace(want) == "…" {
			continue
		}
		for i < len(lines) && lines[i] != want {
			i++
		}
		if i == len(lines) {
			t.Errorf("the sample's line %q is not in the banner, or out of its order:\n%s", want, banner)
			return
		}
	}
	for _, l := range lines {
		if l == "devices:" {
			break
		}
		if !strings.Contains(sample, l+"\n") {
			t.Errorf("the banner's line %q is not in the sample", l)
		}
	}
}

// TestUsageSigningVector: the signing test vector of docs/usage.md is
// the demo fleet's key and secret signed by gwsim's own auth.Sign, and
// its bytes are the three joined.
func TestUsageSigningVector(t *testing.T) {
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([^`]+)` \\| `(\\d{14})` \\| `([^`]+)` \\| `([0-9a-f]{32})` \\|$").FindStringSubmatch(usageDoc(t))
	if row == nil {
		t.Fatal("docs/usage.md has no signing test vector row")
	}
	key, secret, ts, joined, sign := row[1], row[2], row[3], row[4], row[5]
	if joined != key+secret+ts {
		t.Errorf("the bytes hashed %q, want %q", joined, key+secret+ts)
	}
	if got := auth.Sign(key, secret, ts); got != sign {
		t.Errorf("the vector's sign %s, gwsim signs %s", sign, got)
	}
	tg, err := fleet.Demo().Target()
	if err != nil || tg.Key.Key != key || tg.Key.Secret != secret {
		t.Errorf("the vector's key and secret are not the demo fleet's: %v", err)
	}
}
