package main

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/stopsignal"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// blockedOnStdin starts gwconform sign with a stdin that never ends: it
// is blocked in a read no context reaches.
func blockedOnStdin(t *testing.T) (*exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command(bins.gwconform, "sign")
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(300 * time.Millisecond) // in its read
	return cmd, done
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return 0
}

// TestSecondSignalEndsAtOnce: a program blocked where its context does not
// reach ends at once on a second SIGINT.
func TestSecondSignalEndsAtOnce(t *testing.T) {
	cmd, done := blockedOnStdin(t)
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if code := exitCode(err); code != stopsignal.ExitInterrupted {
			t.Errorf("exit %d, want %d", code, stopsignal.ExitInterrupted)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("gwconform did not end at the second SIGINT")
	}
}

// TestFirstSignalAlwaysEnds: the first SIGTERM ends a program blocked
// where its context does not reach, within interruptGrace.
func TestFirstSignalAlwaysEnds(t *testing.T) {
	simtest.Heavy(t)
	cmd, done := blockedOnStdin(t)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if code := exitCode(err); code != stopsignal.ExitTerminated {
			t.Errorf("exit %d, want %d", code, stopsignal.ExitTerminated)
		}
		if took := time.Since(start); took < interruptGrace/2 {
			t.Errorf("ended after %v: the grace for a clean stop was not given", took)
		}
	case <-time.After(interruptGrace + 5*time.Second):
		t.Fatal("gwconform did not end within the grace after SIGTERM")
	}
}
