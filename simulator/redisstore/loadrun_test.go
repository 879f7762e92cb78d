package redisstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// loadRun is gwconform load sending renames and commands in the
// background with an ack log, for the tests that break something under
// load and then check that no acknowledged change was lost.
type loadRun struct {
	cmd            *exec.Cmd
	ackFile        string
	stdout, stderr bytes.Buffer
}

// startLoad starts gwconform load (rename, command and message, 4 connections)
// with the given --target flags for duration at rate requests a second;
// it returns once the ack log has lines lines, so that what the test
// breaks next breaks mid-load.
func startLoad(t *testing.T, ctx context.Context, targets []string, duration string, rate, lines int) *loadRun {
	t.Helper()
	l := &loadRun{ackFile: filepath.Join(t.TempDir(), "acks.jsonl")}
	args := []string{"load"}
	for _, tg := range targets {
		args = append(args, "--target", tg)
	}
	args = append(args, "--fleet", fleetFile(t), "--mix", "rename=2,command=2,message=1", "--duration", duration,
		"--rate", strconv.Itoa(rate), "--concurrency", "4", "--ack-log", l.ackFile, "--json", "--quiet")
	l.cmd = exec.CommandContext(ctx, gwconform(t), args...)
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for l.lines() < lines {
		if time.Now().After(deadline) {
			l.cmd.Process.Kill()
			l.cmd.Wait()
			t.Fatalf("the ack log has %d lines after 30 s\n%s%s", l.lines(), l.stdout.String(), l.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return l
}

// lines is how many lines the ack log has so far.
func (l *loadRun) lines() int {
	b, _ := os.ReadFile(l.ackFile)
	return bytes.Count(b, []byte("\n"))
}

// finish waits for the load to end with exit 1 (some requests refused or
// unanswered while something was broken), or 0 where allowed, and gives
// its result and ack log.
func (l *loadRun) finish(t *testing.T, zeroAllowed bool) (load.Result, []load.AckEntry) {
	t.Helper()
	err := l.cmd.Wait()
	var ee *exec.ExitError
	if !(err == nil && zeroAllowed) && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
		t.Fatalf("gwconform load: %v (want exit 1 for the requests refused or unanswered while broken)\n%s%s", err, l.stdout.String(), l.stderr.String())
	}
	var res load.Result
	if err := json.Unmarshal(l.stdout.Bytes(), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, l.stdout.String())
	}
	f, err := os.Open(l.ackFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := load.ReadAckLog(f)
	if err != nil {
		t.Fatal(err)
	}
	return res, entries
}

// checkNothingLost reads every device the ack log changed through the
// gwsim at base: each holds, for its name and each field, its last
// acknowledged value or one sent after it that got no answer; and every
// gateway it sent messages to holds each acknowledged message once, in
// order. It gives
// how many devices it checked; fewer than least is an error.
func checkNothingLost(t *testing.T, base string, entries []load.AckEntry, least int) int {
	t.Helper()
	want := load.Expectations(entries)
	if len(want) < least {
		t.Errorf("only %d devices changed, want at least %d", len(want), least)
	}
	c := simtest.NewClient(t, base)
	for _, x := range want {
		d := c.Device(x.MAC, x.SN)
		for _, m := range x.Mismatches(d.Name, d.State) {
			t.Error("lost: " + m)
		}
	}
	// Every acknowledged message once on its gateway, in order.
	rep, err := load.AckCheck{Target: base}.CheckMessages(context.Background(), load.MessageExpectations(entries))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Mismatches {
		t.Error("message: " + m.String())
	}
	t.Logf("%d acknowledged messages on %d gateways checked (%d evicted from capped logs)", rep.Messages, rep.Gateways, rep.Evicted)
	return len(want)
}
