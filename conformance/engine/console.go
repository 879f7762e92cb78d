package engine

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/report"
)

// progressLine is the run's progress on the console: how many checks are
// done of how many, how many failed so far, the time taken and an
// estimate of the time left. Off a terminal it is a line every interval
// (a CI log keeps each); on a terminal one line rewritten in place, wiped
// when the run ends so that the summary starts on a line of its own.
type progressLine struct {
	w       io.Writer
	inPlace bool
	every   time.Duration
	start   time.Time
	// catalog tells a check's level, to count its failure as the
	// summary does.
	catalog check.Catalog
	total   atomic.Int64
	done    atomic.Int64
	failed  atomic.Int64
	known   atomic.Int64
	// interrupted counts the checks cut short, as the summary does: not
	// failed.
	interrupted atomic.Int64
	mu          sync.Mutex // one write at a time, none after stop
	stopped     bool
	shown       bool
	stopTick    chan struct{}
	ticked      chan struct{}
	// note, when set, adds what the run found about the target's pace
	// (a slow device and its median answer time).
	note func() string
	// ahead, when set, says whether checks are running ahead of their
	// place now: they are done only when their place comes, so the pace
	// of the checks done says nothing of the time left (the note says
	// when the last chain is expected to end).
	ahead func() bool
	// left, when set, is the schedule's estimate of the time left
	// (schedule.Ahead.Left): each check left at the pace of its kind.
	left func() (schedule.Estimate, bool)
	// workers are the progress files of the other workers of a
	// --parallel run (workerProgress): their counts add to this one's.
	workers []string
	// file, in a worker, is where its counts go for the run that
	// started it; nothing is shown.
	file string
}

// minPaced and minPacedTime are how many checks, and how long, the pace
// of checks done in place is measured over before it estimates the time
// left: the first checks (the pre-flight's controls, a far device's
// first batch) say nothing of the rest.
const (
	minPaced     = 50
	minPacedTime = 5 * time.Second
)

// workerProgress is where a worker of a --parallel run keeps its counts
// for the run that started it: beside its report.
func workerProgress(report string) string { return report + ".progress" }

// counts are the numbers a progress line shows.
type counts struct{ done, total, failed, known, interrupted int64 }

func (c counts) String() string {
	return fmt.Sprintf("%d %d %d %d %d\n", c.done, c.total, c.failed, c.known, c.interrupted)
}

// own is this process's counts.
func (p *progressLine) own() counts {
	return counts{p.done.Load(), p.total.Load(), p.failed.Load(), p.known.Load(), p.interrupted.Load()}
}

// all is the run's counts: this process's and, in a --parallel run, each
// worker's as it last wrote them; all says whether every worker has.
func (p *progressLine) all() (c counts, all bool) {
	c, all = p.own(), true
	for _, f := range p.workers {
		var w counts
		b, err := os.ReadFile(f)
		if err != nil {
			all = false
			continue
		}
		if n, _ := fmt.Sscan(string(b), &w.done, &w.total, &w.failed, &w.known, &w.interrupted); n != 5 {
			all = false
			continue
		}
		c.done, c.total, c.failed, c.known = c.done+w.done, c.total+w.total, c.failed+w.failed, c.known+w.known
		c.interrupted += w.interrupted
	}
	return c, all
}

// save writes a worker's counts, whole (renamed into place: the run that
// reads them never sees half a line).
func (p *progressLine) save() {
	tmp := p.file + ".tmp"
	if os.WriteFile(tmp, []byte(p.own().String()), 0o600) == nil {
		_ = os.Rename(tmp, p.file)
	}
}

// startProgress registers the nodes that count the checks and starts
// the line; the function it returns stops it and wipes an in-place line.
// Its counts are the summary's: an INFO probe never fails, and a failure
// the baseline bl excuses is a known failure, not a failed check. note,
// when set, adds what the run found about the target's pace; ahead says
// whether checks run ahead of their place now.
func startProgress(w io.Writer, inPlace bool, every time.Duration, cat check.Catalog, bl *report.Baseline, note func() string, ahead func() bool, left func() (schedule.Estimate, bool), workers []string) func() {
	p := &progressLine{w: w, inPlace: inPlace, every: every, start: time.Now(), catalog: cat,
		stopTick: make(chan struct{}), ticked: make(chan struct{}), note: note, ahead: ahead, left: left, workers: workers}
	return p.begin(bl)
}

// startWorkerProgress keeps a worker's counts in file, for the progress
// line of the run that started it, every interval and once more at the end.
func startWorkerProgress(file string, cat check.Catalog, bl *report.Baseline) func() {
	p := &progressLine{file: file, every: 250 * time.Millisecond, start: time.Now(), catalog: cat,
		stopTick: make(chan struct{}), ticked: make(chan struct{})}
	return p.begin(bl)
}

func (p *progressLine) begin(bl *report.Baseline) func() {
	ginkgo.ReportBeforeSuite(func(r ginkgo.Report) {
		p.total.Store(int64(r.PreRunStats.SpecsThatWillRun))
	})
	ginkgo.ReportAfterEach(func(sr ginkgo.SpecReport) {
		// Only the specs that will run count: a spec a filter left out
		// is reported skipped without a reason.
		if !sr.LeafNodeType.Is(types.NodeTypeIt) || sr.State.Is(types.SpecStateSkipped) && sr.Failure.Message == "" {
			return
		}
		p.done.Add(1)
		p.count(sr, bl)
	})
	go p.loop()
	return p.stop
}

// count counts a finished spec's failure as the summary does.
func (p *progressLine) count(sr types.SpecReport, bl *report.Baseline) {
	if !sr.State.Is(types.SpecStateFailureStates) {
		return
	}
	id := check.IDFromLabels(sr.Labels())
	m, isCheck := p.catalog.Lookup(id)
	switch {
	case sr.State.Is(types.SpecStateInterrupted | types.SpecStateAborted):
		p.interrupted.Add(1)
	case isCheck && m.Level == check.Info:
		// INFO never fails a run: "could not complete" is in the summary.
	case isCheck && sr.State.Is(types.SpecStateFailed) && bl.Excuses(id):
		p.known.Add(1)
	default:
		p.failed.Add(1)
	}
}

func (p *progressLine) loop() {
	defer close(p.ticked)
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.stopTick:
			return
		case <-t.C:
			if p.file != "" {
				p.save()
				continue
			}
			p.show()
		}
	}
}

// Text is the progress in words.
func (p *progressLine) Text(now time.Time) string {
	c, all := p.all()
	done, total := c.done, c.total
	elapsed := now.Sub(p.start)
	s := fmt.Sprintf("gwconform: %d/%d checks done", done, total)
	if !all {
		// A worker that has not said yet: the total is not known.
		s = fmt.Sprintf("gwconform: %d/%d+ checks done", done, total)
	}
	if f := c.failed; f > 0 {
		s += fmt.Sprintf(", %d failed", f)
	}
	if i := c.interrupted; i > 0 {
		s += fmt.Sprintf(", %d interrupted", i)
	}
	if k := c.known; k == 1 {
		s += ", 1 known failure"
	} else if k > 1 {
		s += fmt.Sprintf(", %d known failures", k)
	}
	s += ", " + clock(elapsed)
	switch {
	case p.left != nil && len(p.workers) == 0:
		// The schedule's estimate: each check left at the pace of its
		// kind as it will run (told from ahead, run in its place, or run
		// ahead beside other devices), and the stretch under way's
		// longest chain. None until it has measured enough.
		if e, ok := p.left(); ok && total > done {
			s += ", about " + clock(max(e.Left, time.Second)) + " left"
			if e.Unpaced > 0 {
				s += fmt.Sprintf(" and %d checks of a pace not known yet", e.Unpaced)
			}
		}
	case p.ahead != nil && p.ahead():
		// Checks run ahead are done only when their place comes: the
		// pace of checks done says nothing of the time left.
	case all && done >= minPaced && elapsed >= minPacedTime && total > done:
		// The other workers' checks of a --parallel run: the pace so
		// far, once it has been measured over enough checks to mean
		// something.
		left := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
		s += ", about " + clock(left) + " left"
	}
	if p.note != nil {
		if n := p.note(); n != "" {
			s += "; " + n
		}
	}
	return s
}

// clock writes a duration as m:ss.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d/time.Minute), int(d%time.Minute/time.Second))
}

func (p *progressLine) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	if p.inPlace {
		fmt.Fprint(p.w, "\r\x1b[K"+p.Text(time.Now()))
	} else {
		fmt.Fprintln(p.w, p.Text(time.Now()))
	}
	p.shown = true
}

func (p *progressLine) stop() {
	close(p.stopTick)
	<-p.ticked
	if p.file != "" {
		p.save()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.inPlace && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
