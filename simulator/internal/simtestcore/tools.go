package simtestcore

import (
	"os"
	"os/exec"
	"testing"
)

// NeedTool returns the path of a program a test starts for real
// (redis-server, curl, /usr/bin/chromium). When it is not installed, the
// test is skipped with one line, except under CI=true, where it fails:
// CI installs every such tool (.ci/run), so a missing one there is a
// broken CI, not a reason to test less. install is how to get it.
func NeedTool(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed, and CI=true needs every test to run (%s)", name, install)
	}
	t.Skipf("%s not installed (%s)", name, install)
	return ""
}
