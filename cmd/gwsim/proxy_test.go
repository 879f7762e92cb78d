package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

var proxyBanner = regexp.MustCompile(`gwsim proxy listening on (http://\S+), in front of`)

// TestProxyCommand: gwsim proxy in front of gwsim serve relays the answer,
// records a cassette without credentials, and gwsim clients reads its
// client report.
func TestProxyCommand(t *testing.T) {
	up, _, _, _ := serve(t)
	dir := filepath.Join(t.TempDir(), "cassettes")
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- Run(ctx, []string{"proxy", "--upstream", up, "--addr", "127.0.0.1:0", "--record", dir, "--fleet", "../../fixtures/demo-fleet.yaml",
			"--admin-token", testToken, "--log-level", "warn"}, stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("gwsim proxy exited %d: %s", code, stderr.String())
		}
	})
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; {
		if m := proxyBanner.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no banner: %q %q", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	target, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = target.Key.Key, target.Key.Secret, target.AccountID, target.MAC
	c.Send(device.SendCommand, device.XML, c.Command(target.Devices["Light Dimmer"].SN, "Light Dimmer", simtest.N("dimming", "33"))).OK(t, device.XML)
	c.Send(device.SendCommand, device.JSON, c.Command(target.Devices["Appliance Module"].SN, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On"))).
		Fail(t, device.JSON, http.StatusBadRequest, device.CodeUnexpectedField, "Relay2")

	code, out, errs := run("clients", "--target", url, "--admin-token", testToken)
	if code != 0 || !strings.Contains(out, "FAIL app sent no fields that belong to another device type") || !strings.Contains(out, "service "+up) {
		t.Errorf("gwsim clients against the proxy: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(stderr.String(), "Relay2") || !strings.Contains(stderr.String(), "unexpected_field (SHOULD)") {
		t.Errorf("the violation was not logged: %s", stderr.String())
	}
	if !strings.Contains(stdout.String(), url+"/_sim/") {
		t.Errorf("the banner does not name the live page: %s", stdout.String())
	}
	for _, secret := range []string{target.Key.Key, target.Key.Secret} {
		if strings.Contains(stderr.String(), secret) || strings.Contains(stdout.String(), secret) {
			t.Errorf("the log or the banner carries %q", secret)
		}
	}
	code, page, _ := run("clients", "--target", url, "--admin-token", testToken, "--format", "junit")
	if code != 0 || !strings.Contains(page, `<testsuite name="service `+up) || !strings.Contains(page, "refuses a broken request with the rule&#39;s error code") {
		t.Errorf("the JUnit report of the service: exit %d\n%s", code, page)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 2 {
		t.Fatalf("cassettes: %v", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, secret := range []string{target.Key.Key, target.Key.Secret, `"sign"`, `"timestamp"`} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s carries %s:\n%s", f, secret, b)
			}
		}
	}
	// gwsim serve --replay answers the recorded request from the cassette.
	replay, banner, _, _ := serve(t, "--replay", dir)
	if !strings.Contains(banner.String(), "replaying 2 recorded answers") {
		t.Errorf("banner: %s", banner.String())
	}
	c.Base = replay
	r := c.Send(device.SendCommand, device.XML, c.Command(target.Devices["Light Dimmer"].SN, "Light Dimmer", simtest.N("dimming", "33")))
	r.OK(t, device.XML)
	if r.Header.Get("X-Gwsim-Replayed") != "true" {
		t.Errorf("not replayed: %v", r.Header)
	}
	if code, _, errs := run("serve", "--replay", filepath.Join(dir, "missing")); code != 2 || !strings.Contains(errs, "missing") {
		t.Errorf("a missing cassette directory: exit %d %s", code, errs)
	}
	for _, args := range [][]string{{"proxy"}, {"proxy", "--upstream", "ftp://x"}, {"proxy", "--upstream", up, "extra"}} {
		if code, _, _ := run(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
