package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// serveLogged runs gwsim serve with args, sends a command in each format
// to the demo fleet, stops it and returns its log (stderr).
func serveLogged(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	exit := make(chan int, 1)
	go func() { exit <- Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), stdout, stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	var url string
	for url == "" {
		if m := listening.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no banner: %q %q", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tg, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = tg.Key.Key, tg.Key.Secret, tg.AccountID, tg.MAC
	for _, format := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, format, c.Command(tg.Devices["Light Dimmer"].SN, "Light Dimmer", simtest.S("dimming", "33"))).OK(t, format)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	return stderr.String()
}

// gwsim serve with its default flags logs start-up and shutdown but no
// line per request; --access-log adds one per request, without the
// secret; --log-summary writes the summary.
func TestServeLogging(t *testing.T) {
	tg, _ := fleet.Demo().Target()
	def := serveLogged(t)
	if strings.Contains(def, "msg=request") || !strings.Contains(def, "msg=stopped") {
		t.Errorf("default log:\n%s", def)
	}
	acc := serveLogged(t, "--access-log")
	if n := strings.Count(acc, "msg=request"); n != 2 || !strings.Contains(acc, "format=xml") || strings.Contains(acc, tg.Key.Secret) {
		t.Errorf("--access-log: %d request lines:\n%s", n, acc)
	}
	sum := serveLogged(t, "--log-summary", "20ms", "--log-format", "json")
	if !strings.Contains(sum, `"msg":"summary"`) || !strings.Contains(sum, `"total":2`) || strings.Contains(sum, `"msg":"request"`) {
		t.Errorf("--log-summary 20ms:\n%s", sum)
	}
	if code, _, errb := run("serve", "--log-summary", "-1s"); code != 2 || !strings.Contains(errb, "--log-summary") {
		t.Errorf("--log-summary -1s: exit %d %s", code, errb)
	}
}

// gwsim serve keeps the collector's headroom by default (package
// gcheadroom); --gc-headroom 0 leaves Go's own pace, and so does a GOGC set
// in the environment, which a debug line says.
func TestServeKeepsGCHeadroom(t *testing.T) {
	parse := func(args ...string) (*Main, *syncBuffer) {
		errb := &syncBuffer{}
		m := &Main{Stdout: &syncBuffer{}, Stderr: errb}
		if err := m.ParseFlags(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return m, errb
	}
	m, _ := parse()
	if m.GCHeadroom != 16 {
		t.Errorf("--gc-headroom defaults to %d MiB, want 16", m.GCHeadroom)
	}
	k := m.keepHeadroom()
	if k == nil {
		t.Fatal("default flags: no headroom kept")
	}
	k.Stop()
	if m, _ := parse("--gc-headroom", "0"); m.keepHeadroom() != nil {
		t.Error("--gc-headroom 0 still keeps a headroom")
	}
	t.Setenv("GOGC", "100")
	m, errb := parse("--log-level", "debug")
	if m.keepHeadroom() != nil {
		t.Error("GOGC set: a headroom kept all the same")
	}
	if !strings.Contains(errb.String(), "GOGC is set") {
		t.Errorf("GOGC set: no debug line says why: %q", errb.String())
	}
}
