package simtestcore

import (
	"fmt"
	"runtime"
	"testing"
)

// recorder is a testing.TB that records how NeedTool ended the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func needTool(t *testing.T, name string) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NeedTool(r, name, "apt-get install -y "+name)
	}()
	<-done
	return r
}

// TestNeedTool: a missing tool skips with one line outside CI and fails
// under CI=true; a present one is returned.
func TestNeedTool(t *testing.T) {
	const missing = "gwtools-no-such-tool"
	t.Setenv("CI", "")
	if r := needTool(t, missing); r.skipped != missing+" not installed (apt-get install -y "+missing+")" || r.failed != "" {
		t.Errorf("outside CI: skipped %q, failed %q", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	if r := needTool(t, missing); r.failed == "" || r.skipped != "" {
		t.Errorf("CI=true: skipped %q, failed %q", r.skipped, r.failed)
	}
	if r := needTool(t, "go"); r.failed != "" || r.skipped != "" {
		t.Errorf("go is installed: skipped %q, failed %q", r.skipped, r.failed)
	}
}
