package trial_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	gtypes "github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/gwdmi/gwtools/conformance/internal/trial"
)

// A recorded body ends where a live one would, and says how.
func TestRecordingEndsAsALiveBodyWould(t *testing.T) {
	for _, c := range []struct {
		name        string
		body        func(*trial.T)
		outcome     trial.Outcome
		message     string
		expectation bool
	}{
		{"passes", func(r *trial.T) { r.Expect(1).To(gomega.Equal(1)) }, trial.Passed, "", false},
		{"expectation", func(r *trial.T) { r.Expect(1).To(gomega.Equal(2), "one is not two") }, trial.Failed, "one is not two", true},
		{"fails", func(r *trial.T) { r.Fail("the device changed") }, trial.Failed, "the device changed", false},
		{"skips", func(r *trial.T) { r.Skip("no such device") }, trial.Skipped, "no such device", false},
		{"stops", func(r *trial.T) { r.Stop("the target stopped answering") }, trial.Stopped, "the target stopped answering", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := trial.Recording()
			after := false
			end := r.Run(func() { c.body(r); after = true })
			if end.Outcome != c.outcome || end.Expectation != c.expectation {
				t.Fatalf("ended %+v, want outcome %d, expectation %v", end, c.outcome, c.expectation)
			}
			if c.message != "" && !strings.Contains(end.Message, c.message) {
				t.Errorf("message %q, want it to hold %q", end.Message, c.message)
			}
			if after != (c.outcome == trial.Passed) {
				t.Errorf("the body went on after its ending: %v", after)
			}
		})
	}
}

// The steps and entries are kept in the order told, and replayed so; a
// body's own panic is not an ending and goes on.
func TestRecordingKeepsStepsInOrderAndLetsOtherPanicsThrough(t *testing.T) {
	r := trial.Recording()
	ctx := trial.With(context.Background(), r)
	r.Run(func() {
		trial.From(ctx).By("one")
		trial.From(ctx).Entry("exchange", 2, ginkgo.ReportEntryVisibilityNever)
		trial.From(ctx).By("three")
	})
	if got := strings.Join(r.Told(), ","); got != "one,exchange,three" {
		t.Fatalf("told %s", got)
	}
	into := trial.Recording()
	r.ReplaySteps(into)
	if got := strings.Join(into.Told(), ","); got != "one,exchange,three" {
		t.Fatalf("replayed %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a body's own panic was swallowed")
		}
	}()
	trial.Recording().Run(func() { panic("a bug in the body") })
}

// Replay tells a trial what was recorded, then ends it as the recording
// ended: a failed expectation stays an expectation.
func TestReplayEndsAsRecorded(t *testing.T) {
	r := trial.Recording()
	end := r.Run(func() {
		r.By("sending")
		r.Expect("refused").To(gomega.Equal("accepted"))
	})
	into := trial.Recording()
	got := into.Run(func() { r.Replay(into, end) })
	if got.Outcome != trial.Failed || !got.Expectation || got.Message != end.Message {
		t.Fatalf("replayed %+v, recorded %+v", got, end)
	}
}

// A failure in a helper is placed at the line that called the helper,
// on its first call and on every later one (Helper marks a call site
// once), as ginkgo.GinkgoHelper places it.
func TestHelperPlacesAFailureAtItsCaller(t *testing.T) {
	for i := range 3 {
		at, line := locatedInHelper(), lineHere()
		if at.LineNumber != line || !strings.HasSuffix(at.FileName, "trial_test.go") {
			t.Fatalf("call %d: a failure in a helper is placed at %s, want trial_test.go:%d", i+1, at, line)
		}
	}
	// Without Helper, the same failure is placed in the function itself.
	if at, line := locatedInPlace(), lineHere(); at.LineNumber == line {
		t.Fatalf("a function not marked as a helper is placed at its caller (%s)", at)
	}
}

//go:noinline
func locatedInHelper() gtypes.CodeLocation {
	trial.Helper()
	return gtypes.NewCodeLocation(0)
}

//go:noinline
func locatedInPlace() gtypes.CodeLocation {
	return gtypes.NewCodeLocation(0)
}

func lineHere() int {
	_, _, line, _ := runtime.Caller(1)
	return line
}
