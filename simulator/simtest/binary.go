package simtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

var binaries struct {
	dirOnce sync.Once
	dir     string
	dirErr  error
	mu      sync.Mutex
	built   map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// binDirPrefix names the directories Binary builds into, one per test
// process (the pid follows).
const binDirPrefix = "gwtools-simtest-bin-"

// Binary is the path of a program of this module (gwsim, gwconform),
// built once per test process (go build, with the build cache) into a
// directory of its own, shared by every test of the process. The
// directory outlives the process; the next Binary removes those of
// processes that have ended.
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
	binaries.dirOnce.Do(func() {
		removeStaleBinDirs()
		binaries.dir = filepath.Join(os.TempDir(), binDirPrefix+strconv.Itoa(os.Getpid()))
		os.RemoveAll(binaries.dir)
		binaries.dirErr = os.MkdirAll(binaries.dir, 0o755)
	})
	if binaries.dirErr != nil {
		return "", binaries.dirErr
	}
	binaries.mu.Lock()
	if binaries.built == nil {
		binaries.built = map[string]*build{}
	}
	b := binaries.built[name]
	if b == nil {
		b = &build{}
		binaries.built[name] = b
	}
	binaries.mu.Unlock()
	b.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			b.err = fmt.Errorf("the go command is not on PATH: %v", err)
			return
		}
		out := filepath.Join(binaries.dir, name)
		if msg, err := exec.Command(goTool, "build", "-o", out, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
			return
		}
		b.path = out
	})
	return b.path, b.err
}

// removeStaleBinDirs removes the binary directories of test processes
// that have ended.
func removeStaleBinDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), binDirPrefix))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
}
