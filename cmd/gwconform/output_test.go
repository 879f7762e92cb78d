package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Secrets the test puts in every place one can come from.
const (
	envToken   = "envtoken-5c1e7a"
	flagToken  = "flagtoken-9d3b2f"
	fleetKey   = "fleetkey-7e21aa"
	fleetSec   = "fleetsecret-42b8c0"
	signSecret = "GWCONFORM_TEST_SIGN"
)

func secretFleet(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../fixtures/demo-fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("demo-key", fleetKey, "demo-secret", fleetSec).Replace(string(b))
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runProgram runs a program with the secret-carrying environment.
func runProgram(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GWSIM_ADMIN_TOKEN="+envToken, "GWSIM_SECRET="+fleetSec)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestNoSecretInAnyOutput: with a known secret in every variable, flag and
// fleet that can carry one, no usage text, error, log, console output or
// report of either program shows it, or a sign.
func TestNoSecretInAnyOutput(t *testing.T) {
	dir := t.TempDir()
	fleetFile := secretFleet(t)
	var outputs []string
	for _, args := range [][]string{
		{"serve", "-h"}, {"serve", "--bogus"}, {"serve", "--admin-token", flagToken, "--bogus"}, {"fleet", "-h"}, {"-h"}, {"--version"},
	} {
		outputs = append(outputs, "gwsim "+label(args)+"\n"+runProgram(t, dir, bins.gwsim, args...))
	}
	for _, args := range [][]string{
		{"run", "-h"}, {"run", "--bogus"}, {"run", "--admin-token", flagToken, "--bogus"}, {"load", "-h"}, {"load", "--bogus"},
		{"checks", "-h"}, {"sign", "-h"}, {"verify", "-h"}, {"replay", "-h"}, {"baseline", "-h"}, {"-h"}, {"--version"},
		{"run", "--fleet", fleetFile, "--admin-token", flagToken, "--target", "http://127.0.0.1:1"},
		{"load", "--fleet", fleetFile, "--target", "http://gw:" + flagToken + "@127.0.0.1:1", "--requests", "1"},
		{"load", "--fleet", fleetFile, "--target", "ftp://gw:" + flagToken + "@127.0.0.1:1", "--requests", "1"},
		{"load", "merge", "-h"}, {"load", "check-acks", "-h"}, {"load", "merge", "--bogus"},
		{"load", "check-acks", "acks.jsonl", "--target", "ftp://gw:" + flagToken + "@127.0.0.1:1"},
	} {
		outputs = append(outputs, "gwconform "+label(args)+"\n"+runProgram(t, dir, bins.gwconform, args...))
	}
	// A full run against gwsim serve with the token, and its reports.
	sim := simtest.Serve(t, bins.gwsim, "--fleet", fleetFile, "--admin-token", flagToken, "--access-log")
	reportDir := filepath.Join(dir, "reports")
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "run", "--target", sim.URL, "--fleet", fleetFile,
		"--admin-token", flagToken, "--report-dir", reportDir, "--bundle", filepath.Join(dir, "b.tar.gz"), "--fail-on", "should"))
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "--target", sim.URL, "--fleet", fleetFile, "--requests", "50"))
	// Over two targets, with an ack log: neither the output nor the log
	// holds a key, secret or sign.
	ackLog := filepath.Join(dir, "acks.jsonl")
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "--target", sim.URL+","+sim.URL, "--fleet", fleetFile,
		"--requests", "50", "--mix", "command=1,message=1,rename=1", "--ack-log", ackLog))
	if b, err := os.ReadFile(ackLog); err != nil || strings.Count(string(b), "\n") != 50 || strings.Contains(string(b), fleetKey) {
		t.Errorf("load --ack-log (50 lines, no api key, no secret, no sign): %v, %q", err, b)
	} else {
		outputs = append(outputs, "load --ack-log\n"+string(b))
	}
	// check-acks with the token from the flag (and from the environment),
	// a load's report directory and its merge.
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "check-acks", ackLog, "--target", sim.URL, "--admin-token", flagToken))
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "check-acks", ackLog, "--target", sim.URL))
	loadDir := filepath.Join(dir, "load")
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "--target", "http://gw:"+flagToken+"@"+strings.TrimPrefix(sim.URL, "http://"),
		"--fleet", fleetFile, "--requests", "30", "--shard", "0/2", "--report-dir", filepath.Join(loadDir, "s0")))
	outputs = append(outputs, runProgram(t, dir, bins.gwconform, "load", "merge", "--report-dir", filepath.Join(loadDir, "merged"), loadDir))
	for _, name := range []string{"s0/load.json", "s0/report.html", "merged/load.json", "merged/report.html"} {
		b, err := os.ReadFile(filepath.Join(loadDir, name))
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, name+"\n"+string(b))
	}
	outputs = append(outputs, sim.Stderr())
	for _, name := range []string{"report.json", "junit.xml", "report.html"} {
		b, err := os.ReadFile(filepath.Join(reportDir, name))
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, name+"\n"+string(b))
	}
	for name, b := range bundleFiles(t, filepath.Join(dir, "b.tar.gz")) {
		outputs = append(outputs, "bundle "+name+"\n"+string(b))
	}
	if !strings.Contains(strings.Join(outputs, "\n"), "Conformance of") {
		t.Fatal("the full run did not run")
	}
	for _, out := range outputs {
		head, _, _ := strings.Cut(out, "\n")
		for _, secret := range []string{envToken, flagToken, fleetSec} {
			if strings.Contains(out, secret) {
				i := strings.Index(out, secret)
				t.Errorf("%s shows the secret %q: …%s…", head, secret, out[max(0, i-80):min(len(out), i+40)])
			}
		}
		if m := signInBody.FindString(out); m != "" {
			t.Errorf("%s shows a sign: %s", head, m)
		}
	}
}

// label names a command line in a message without the secret it carries.
func label(args []string) string {
	return strings.ReplaceAll(strings.Join(args, " "), flagToken, "TOKEN")
}

// TestQuietPlainVersionedOutput: a passing run off a terminal has no
// colour and no observation noise; --color always brings colour; the
// reports of a passing run stay under 2 MB together and name the harness
// and catalog; --version answers; a dry run writes no report unless told
// where.
func TestQuietPlainVersionedOutput(t *testing.T) {
	r := gwconform(t)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stdout))
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("colour codes in output that is not a terminal:\n%q", tail(r.stdout))
	}
	if n := strings.Count(r.stdout, "\n"); n > 40 {
		t.Errorf("a passing run printed %d lines", n)
	}
	if strings.Contains(r.stdout, "offsets accepted") {
		t.Error("INFO observations on the console without -v")
	}
	size := int64(0)
	for _, name := range []string{"report.json", "junit.xml"} {
		fi, err := os.Stat(filepath.Join(r.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	if size >= 2_000_000 {
		t.Errorf("a passing run's report.json and junit.xml take %d bytes together, want under 2 MB", size)
	}
	j, _ := os.ReadFile(filepath.Join(r.dir, "junit.xml"))
	rj, _ := os.ReadFile(filepath.Join(r.dir, "report.json"))
	for _, want := range []string{"gwconform.catalog_version", "gwconform.catalog_hash", "gwconform.harness_version"} {
		if !strings.Contains(string(j), want) {
			t.Errorf("junit.xml has no %s", want)
		}
	}
	if !strings.Contains(string(rj), `"catalog_hash"`) || !strings.Contains(string(rj), `"catalog_version"`) {
		t.Error("report.json does not name its catalog")
	}
	if c := gwconform(t, "--color", "always", "--check", "command.light-dimmer.valid.json", "--allow-partial"); !strings.Contains(c.stdout, "\x1b[") {
		t.Error("--color always gave no colour")
	}
	for bin, name := range map[string]string{bins.gwsim: "gwsim", bins.gwconform: "gwconform"} {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), name+" ") || !strings.Contains(string(out), "go1.") {
			t.Errorf("%s --version: %v %q", name, err, out)
		}
	}
	cwd := t.TempDir()
	out := runProgram(t, cwd, bins.gwconform, "run", "--dry-run", "--check", "message.valid.*")
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("a dry run wrote %v", entries)
	}
	if !strings.Contains(out, `"message_type":"message"`) || !strings.Contains(out, "<message_type>message</message_type>") {
		t.Errorf("a dry run does not print the bodies:\n%s", out)
	}
}
