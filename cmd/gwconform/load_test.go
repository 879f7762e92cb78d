package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// startSim starts the embedded target as gwconform does.
func startSim(t *testing.T, f *fleet.Fleet) Embedded {
	t.Helper()
	sim, err := startSimulator(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim
}

// gwconform load takes --target repeated and comma-separated, writes the
// ack log, and names the flag of each bad value.
func TestLoadTargetsAndAckLog(t *testing.T) {
	f := fleet.Generate(1, 1, 4)
	sim := startSim(t, f)
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.yaml")
	fh, err := os.Create(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteYAML(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	ackFile := filepath.Join(dir, "acks.jsonl")
	var out, errOut bytes.Buffer
	code := loadCmd(context.Background(), []string{"--target", sim.URL(), "--target", sim.URL() + "," + sim.URL(), "--fleet", fleetFile,
		"--requests", "60", "--ack-log", ackFile, "--quiet", "--json"}, &out, &errOut)
	if code != exitPass || !strings.Contains(out.String(), `"acknowledged": 60`) || strings.Count(out.String(), `"requests": 20`) != 3 {
		t.Errorf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	b, err := os.ReadFile(ackFile)
	if err != nil || bytes.Count(b, []byte("\n")) != 60 {
		t.Errorf("ack log: %v, %d lines", err, bytes.Count(b, []byte("\n")))
	}
	sign := auth.Sign(f.Accounts[0].APIKeys[0].Key, f.Accounts[0].APIKeys[0].Secret, auth.Timestamp(time.Now(), f.Location()))
	if bytes.Contains(b, []byte(f.Accounts[0].APIKeys[0].Key)) || bytes.Contains(b, []byte(sign[:16])) {
		t.Error("the ack log holds the api key or a sign")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "ftp://x", "--requests", "1"}, `--target "ftp://x"`},
		{[]string{"--target", sim.URL() + ",", "--requests", "1"}, "-target"},
		{[]string{"--target", sim.URL(), "--target", "http://127.0.0.1:1", "--requests", "1"}, "--target http://127.0.0.1:1 unreachable"},
		{[]string{"--target", sim.URL(), "--requests", "1", "--ack-log", filepath.Join(dir, "no", "such", "dir")}, "--ack-log"},
		{[]string{"--target", sim.URL(), "--fleet", fleetFile, "--requests", "1", "--ack-log", ackFile, "--concurrency", "5"}, "--concurrency 5 with --ack-log"},
	} {
		errOut.Reset()
		if code := loadCmd(context.Background(), c.args, &out, &errOut); code != exitConfig || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, want 2 and %q in:\n%s", c.args, code, c.want, errOut.String())
		}
	}
}

func TestLoadExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{
		{"--concurrency", "0"},
		{"--format", "yaml"},
		{"--mix", "command=x"},
		{"--mix", "command=0"},
		{"--via", "carrier-pigeon"},
		{"--duration", "0"},
		{"--fleet", "/nonexistent.yaml"},
		{"--target", "http://127.0.0.1:1", "--requests", "1"},
		{"extra"},
	} {
		if code := loadCmd(context.Background(), args, &out, &errOut); code != exitConfig {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	if code := loadCmd(context.Background(), []string{"-h"}, &out, &errOut); code != exitPass {
		t.Errorf("-h: exit %d", code)
	}
	// Every answer but success is an error: exit 1.
	rejecter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"status":"error","error":{"code":"bad_signature","field":"sign","message":"no"}}`)
	}))
	defer rejecter.Close()
	out.Reset()
	if code := loadCmd(context.Background(), []string{"--target", rejecter.URL, "--requests", "30", "--quiet"}, &out, &errOut); code != exitFail || !strings.Contains(out.String(), "401 bad_signature") {
		t.Errorf("a target that refuses everything: exit %d, want 1\n%s", code, out.String())
	}
	out.Reset()
	errOut.Reset()
	code := loadCmd(context.Background(), []string{"--requests", "50", "--json"}, &out, &errOut)
	if code != exitPass || !strings.Contains(out.String(), `"requests": 50`) || !strings.Contains(errOut.String(), "in-process") {
		t.Errorf("embedded: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
