package batch

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

const (
	// slowAnswer is the median answer time from which a device is slow.
	slowAnswer = 400 * time.Millisecond
	// batchFrom is the median answer time from which a device's checks
	// (or a gateway's messages) are sent together, Concurrency at a time.
	// A target on this machine answers in well under a millisecond and
	// its requests cost CPU, not waiting: sending them together gains
	// nothing there, and each batch waits for the device to be quiet. Any
	// target across a network answers slower than this.
	batchFrom = 5 * time.Millisecond
	// slowSamples is how many answers a device's median is taken over.
	slowSamples = 5
)

// TimeAnswer keeps the answer time d of a request about a device (sn, a
// catalog.HexOnly serial or a link.LogKey; "" when it names none).
func (s *Sender) TimeAnswer(sn string, d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target = lastAnswers(s.target, d)
	m, ok := median(s.target)
	s.targetFar = ok && m >= batchFrom
	if sn == "" {
		return
	}
	if s.answers == nil {
		s.answers, s.farKeys = map[string][]time.Duration{}, map[string]bool{}
	}
	s.answers[sn] = lastAnswers(s.answers[sn], d)
	if m, ok := s.medianAnswer(sn); ok && m >= batchFrom {
		s.farKeys[sn] = true
	} else {
		delete(s.farKeys, sn)
	}
}

// lastAnswers is a with d added, the last slowSamples kept.
func lastAnswers(a []time.Duration, d time.Duration) []time.Duration {
	a = append(a, d)
	if len(a) > slowSamples {
		a = a[len(a)-slowSamples:]
	}
	return a
}

// Far says whether the target answers in batchFrom or more (its last
// answers, whatever they named, the pre-flight's too; or those about one
// device, or the tested gateway's messages): across a network. Known from
// the first check on, the whole run's checks may run ahead, not only
// those after enough answers about one device.
// It is asked before every check: TimeAnswer keeps the answer ready.
func (s *Sender) Far() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.targetFar || len(s.farKeys) > 0
}

// FarDevice says whether a device's own last answers took batchFrom or
// more: requests to it are worth sending together.
func (s *Sender) FarDevice(sn string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.medianAnswer(sn)
	return ok && m >= batchFrom
}

// SentAhead says whether any device's checks were sent together.
func (s *Sender) SentAhead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.batched) > 0
}

// dueForBatch says whether a device of a target found far is to have
// its checks sent together now, and marks them sent: due unless its own
// answers say it is near, or they were sent. s.mu is held.
func (s *Sender) dueForBatch(sn string) bool {
	if m, ok := s.medianAnswer(sn); (ok && m < batchFrom) || s.batched[sn] {
		return false
	}
	if s.batched == nil {
		s.batched = map[string]bool{}
	}
	s.batched[sn] = true
	return true
}

// medianAnswer is a device's median answer time over its last answers,
// and whether it has enough of them; s.mu is held.
func (s *Sender) medianAnswer(sn string) (time.Duration, bool) {
	return median(s.answers[sn])
}

// median is the median of answer times, and whether there are enough of
// them to tell.
func median(answers []time.Duration) (time.Duration, bool) {
	if len(answers) < 3 {
		return 0, false
	}
	var buf [slowSamples]time.Duration
	a := append(buf[:0], answers...)
	slices.Sort(a)
	return a[len(a)/2], true
}

// SlowNote names the slow devices and their median answer times, and
// what was moved to a stand-in (standin.go) or sent in a lane (lanes.go),
// for the progress line ("" when none is slow).
func (s *Sender) SlowNote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var notes []string
	for _, sn := range s.sortedSlow() {
		m, _ := s.medianAnswer(sn)
		notes = append(notes, fmt.Sprintf("slow device %s: median answer %s%s%s", s.bench.DeviceName(sn), m.Round(10*time.Millisecond), s.standInNote(sn), s.lanesNoteFor(sn)))
	}
	return strings.Join(notes, ", ")
}

// sortedSlow is the slow devices' serials, in order; s.mu is held.
func (s *Sender) sortedSlow() []string {
	var out []string
	for sn := range s.answers {
		if m, ok := s.medianAnswer(sn); ok && m >= slowAnswer {
			out = append(out, sn)
		}
	}
	sort.Strings(out)
	return out
}
