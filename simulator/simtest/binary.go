package simtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Programs Binary builds, by name: the module's commands.
var programs = map[string]string{
	"gwsim":     "github.com/gwdmi/gwtools/cmd/gwsim",
	"gwconform": "github.com/gwdmi/gwtools/cmd/gwconform",
}

var built sync.Map // name -> *build

type build struct {
	once sync.Once
	path string
	err  error
}

// Binary is the path of a program of this module (gwsim, gwconform),
// built once per test process and shared by all its tests. It is built
// with go build into a directory kept for this checkout of the module
// (under os.TempDir, gwtools-simtest-bin), where go build does not link
// again a binary that is up to date: the test processes of one go test
// ./... (and the next runs) share it. A file lock keeps two processes
// from building the same program at once.
func Binary(t testing.TB, name string) string {
	t.Helper()
	path, err := BuildBinary(name)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// BuildBinary is Binary for a TestMain, without a test.
func BuildBinary(name string) (string, error) {
	pkg, ok := programs[name]
	if !ok {
		return "", fmt.Errorf("simtest: no program %q", name)
	}
	v, _ := built.LoadOrStore(name, &build{})
	b := v.(*build)
	b.once.Do(func() { b.path, b.err = goBuild(name, pkg) })
	return b.path, b.err
}

func goBuild(name, pkg string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: %v", err)
	}
	root, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %v", err)
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(root))))
	dir := filepath.Join(os.TempDir(), "gwtools-simtest-bin", hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// One lock for each program: two processes never build the same one
	// at once, and one process may build both side by side.
	lock, err := os.OpenFile(filepath.Join(dir, "."+name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	out := filepath.Join(dir, name)
	msg, err := exec.Command(goTool, "build", "-o", out, pkg).CombinedOutput()
	if err != nil && strings.Contains(string(msg), "not an object file") {
		// Something else took the name: go build does not overwrite it.
		os.Remove(out)
		msg, err = exec.Command(goTool, "build", "-o", out, pkg).CombinedOutput()
	}
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
	}
	return out, nil
}

// PrivateBinary is Binary's program linked (or copied) into a directory
// of this test's own, for a test that puts other files beside it: the
// directory Binary builds into is shared.
func PrivateBinary(t testing.TB, name string) string {
	t.Helper()
	src := Binary(t, name)
	dst := filepath.Join(t.TempDir(), name)
	if err := os.Link(src, dst); err == nil {
		return dst
	}
	b, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
