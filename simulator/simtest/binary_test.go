package simtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Binary builds a program that runs, once per process: a second call
// gives the same file without building again.
func TestBinary(t *testing.T) {
	path := Binary(t, "gwsim")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "gwsim") {
		t.Errorf("%s --version: %v %s", path, err, out)
	}
	again := Binary(t, "gwsim")
	fi2, err := os.Stat(again)
	if err != nil || again != path || !os.SameFile(fi, fi2) || !fi.ModTime().Equal(fi2.ModTime()) {
		t.Errorf("a second Binary gave %s (%v), want the same file %s", again, err, path)
	}
	if _, err := BuildBinary("nosuch"); err == nil {
		t.Error("BuildBinary of an unknown program: no error")
	}
}
