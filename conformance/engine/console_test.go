package engine

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/internal/schedule"
)

// TestProgressLine: the progress says done of total, the failures so far,
// the time taken and the time left; on a terminal it is one line rewritten
// in place and wiped at the end, so that the summary starts on a line of
// its own.
func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &progressLine{start: start}
	p.total.Store(1972)
	p.done.Store(493)
	p.failed.Store(3)
	if got, want := p.Text(start.Add(30*time.Second)), "gwconform: 493/1972 checks done, 3 failed, 0:30, about 1:30 left"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
	// While checks run ahead of their place, few are done: the pace says
	// nothing of the time left.
	running := true
	p.ahead = func() bool { return running }
	if got, want := p.Text(start.Add(30*time.Second)), "gwconform: 493/1972 checks done, 3 failed, 0:30"; got != want {
		t.Errorf("progress while checks run ahead %q, want %q", got, want)
	}
	// The schedule's estimate, when it has one, whatever runs now; none
	// while it has not measured enough, rather than the pace of checks
	// done.
	estimate, measured := schedule.Estimate{Left: 7 * time.Second}, true
	p.left = func() (schedule.Estimate, bool) { return estimate, measured }
	if got, want := p.Text(start.Add(30*time.Second)), "gwconform: 493/1972 checks done, 3 failed, 0:30, about 0:07 left"; got != want {
		t.Errorf("progress while checks run ahead %q, want %q", got, want)
	}
	running = false
	if got, want := p.Text(start.Add(30*time.Second)), "gwconform: 493/1972 checks done, 3 failed, 0:30, about 0:07 left"; got != want {
		t.Errorf("progress in place %q, want %q", got, want)
	}
	// Some checks left without a pace yet: what the others take, and
	// how many are left out.
	estimate.Unpaced = 17
	if got, want := p.Text(start.Add(30*time.Second)), "gwconform: 493/1972 checks done, 3 failed, 0:30, about 0:07 left and 17 checks of a pace not known yet"; got != want {
		t.Errorf("progress before every pace is measured %q, want %q", got, want)
	}
	measured = false
	if got, want := p.Text(start.Add(30*time.Second)), "gwconform: 493/1972 checks done, 3 failed, 0:30"; got != want {
		t.Errorf("progress with no estimate %q, want %q", got, want)
	}
	p.left = nil
	// Too few checks done, or too soon, for their pace to say anything:
	// no estimate (not "about 6:41 left" after the first check).
	early := &progressLine{start: start}
	early.total.Store(4700)
	early.done.Store(1)
	if got, want := early.Text(start.Add(3*time.Second)), "gwconform: 1/4700 checks done, 0:03"; got != want {
		t.Errorf("progress after one check %q, want %q", got, want)
	}
	p.done.Store(1972)
	p.failed.Store(0)
	if got, want := p.Text(start.Add(125*time.Second)), "gwconform: 1972/1972 checks done, 2:05"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}

	var b bytes.Buffer
	term := &progressLine{w: &b, inPlace: true, start: time.Now(), stopTick: make(chan struct{}), ticked: make(chan struct{})}
	term.total.Store(10)
	close(term.ticked) // no ticker: lines are shown by hand
	term.show()
	term.show()
	term.stop()
	out := b.String()
	if strings.Count(out, "\r\x1b[K") != 3 || strings.Contains(out, "\n") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("on a terminal: %q, want the line rewritten in place and wiped at the end", out)
	}
	b.Reset()
	log := &progressLine{w: &b, start: time.Now(), stopTick: make(chan struct{}), ticked: make(chan struct{})}
	close(log.ticked)
	log.show()
	log.stop()
	log.show() // after stop: nothing
	if out := b.String(); strings.Count(out, "\n") != 1 || strings.Contains(out, "\r") {
		t.Errorf("off a terminal: %q, want one line each time", out)
	}
}

// TestProgressCountsEveryWorker: in a --parallel run the progress line
// counts the checks of every worker (each keeps its counts in a file
// beside its report), not only the run's own: the total is marked as not
// yet known until every worker has said, and no time left is guessed.
func TestProgressCountsEveryWorker(t *testing.T) {
	dir := t.TempDir()
	report := func(n string) string { return dir + "/worker-" + n + ".json" }
	for i, c := range []counts{{done: 100, total: 1000, failed: 2}, {done: 300, total: 1100, known: 1}} {
		w := &progressLine{file: workerProgress(report(string(rune('1' + i))))}
		w.done.Store(c.done)
		w.total.Store(c.total)
		w.failed.Store(c.failed)
		w.known.Store(c.known)
		w.save()
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &progressLine{start: start, workers: []string{workerProgress(report("1")), workerProgress(report("2")), workerProgress(report("3"))}}
	p.total.Store(900)
	p.done.Store(600)
	if got, want := p.Text(start.Add(10*time.Second)), "gwconform: 1000/3000+ checks done, 2 failed, 1 known failure, 0:10"; got != want {
		t.Errorf("worker 3 not yet started: %q, want %q", got, want)
	}
	p.workers = p.workers[:2]
	if got, want := p.Text(start.Add(10*time.Second)), "gwconform: 1000/3000 checks done, 2 failed, 1 known failure, 0:10, about 0:20 left"; got != want {
		t.Errorf("every worker counted: %q, want %q", got, want)
	}
}
