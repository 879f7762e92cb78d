package schedule_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
)

// aheadRun is a run of checks through schedule.Ahead: each check's body
// notes when it ran and whether under the trial of its place.
type aheadRun struct {
	mu    sync.Mutex
	ran   []string
	place map[string]*trial.T
	fail  map[string]int
}

func (r *aheadRun) body(id string) func(context.Context) {
	return func(ctx context.Context) {
		t := trial.From(ctx)
		r.mu.Lock()
		where := "ahead"
		if t == r.place[id] {
			where = "place"
		}
		r.ran = append(r.ran, id+"@"+where)
		failing := r.fail[id] > 0
		r.fail[id]--
		r.mu.Unlock()
		t.By("sent " + id)
		if failing {
			t.Fail(id + " failed")
		}
	}
}

// In their place, one at a time: the first check about a key runs the
// rest of its stretch ahead (up to the check that runs in its place),
// which is then told from what each recorded; past the check in its
// place, the next stretch runs ahead only when its first check's place
// comes; a check that failed ahead runs again in its place; nothing runs
// ahead while ahead says no.
func TestAheadRunsAStretchAtATimeAndConfirmsFailuresInPlace(t *testing.T) {
	r := &aheadRun{place: map[string]*trial.T{}, fail: map[string]int{"b2": 1}}
	var a schedule.Ahead
	key := func(k string) func() string { return func() string { return k } }
	decl := []schedule.Check{
		{ID: "a1", Key: key("a")}, {ID: "b1", Key: key("b")}, {ID: "a2", Key: key("a")}, {ID: "b2", Key: key("b")},
		{ID: "effect"},
		{ID: "a3", Key: key("a")}, {ID: "none", Key: key("")}, {ID: "b3", Key: key("b")},
	}
	for _, c := range decl {
		c.Body = r.body(c.ID)
		a.Declare(c)
	}
	if got := a.IDs(); len(got) != len(decl) || got[4] != "effect" {
		t.Fatalf("IDs %v", got)
	}
	told := map[string][]string{}
	for _, c := range decl {
		place := trial.Recording()
		r.mu.Lock()
		r.place[c.ID] = place
		r.mu.Unlock()
		end := place.Run(func() {
			a.Run(trial.With(context.Background(), place), c.ID, r.body(c.ID), func() bool { return true })
		})
		told[c.ID] = place.Told()
		if c.ID == "b2" && end.Outcome != trial.Passed {
			t.Errorf("b2 failed ahead and passed alone, yet ended %v", end.Outcome)
		}
	}
	// a1 ran in its place; b1, a2, b2 ahead at a1's turn; b2 failed
	// there and again in its place (its second run passes); the effect
	// in its place; a3's stretch: b3 ahead, then "none" (about no one
	// thing) ahead once b3's chain has ended.
	want := map[string]bool{"a1@place": true, "b1@ahead": true, "a2@ahead": true, "b2@ahead": true, "b2@place": true,
		"effect@place": true, "a3@place": true, "b3@ahead": true, "none@ahead": true}
	for _, got := range r.ran {
		if !want[got] {
			t.Errorf("ran %s", got)
		}
		delete(want, got)
	}
	for w := range want {
		t.Errorf("did not run %s", w)
	}
	at := func(id string) int { return slices.Index(r.ran, id) }
	if !(at("b2@ahead") < at("effect@place") && at("effect@place") < at("b3@ahead")) {
		t.Errorf("a stretch ran past the check in its place: %v", r.ran)
	}
	if at("none@ahead") < at("b3@ahead") {
		t.Errorf("a check about no one thing ran before its stretch's chains ended: %v", r.ran)
	}
	if !slices.Equal(told["a2"], []string{"sent a2"}) {
		t.Errorf("a2's place was told %v, want what it recorded ahead", told["a2"])
	}
	if len(told["b2"]) != 3 || !strings.Contains(told["b2"][1], "confirmed alone") {
		t.Errorf("b2's place was told %v, want its run ahead, the confirmation, its run alone", told["b2"])
	}
	if checks, chains, _ := a.Ran(); checks != 5 || chains != 2 {
		t.Errorf("%d checks ran ahead in %d chains, want 5 (b1, a2, b2, b3, none) in 2 (a, b)", checks, chains)
	}

	var never schedule.Ahead
	r2 := &aheadRun{place: map[string]*trial.T{}, fail: map[string]int{}}
	for _, c := range decl[:2] {
		c.Body = r2.body(c.ID)
		never.Declare(c)
	}
	for _, c := range decl[:2] {
		place := trial.Recording()
		r2.place[c.ID] = place
		place.Run(func() {
			never.Run(trial.With(context.Background(), place), c.ID, r2.body(c.ID), func() bool { return false })
		})
	}
	if !slices.Equal(r2.ran, []string{"a1@place", "b1@place"}) {
		t.Errorf("with ahead saying no: %v", r2.ran)
	}
}

// TestLeftCountsEachCheckAtThePaceOfItsKind: the time left is the
// schedule's, not the pace of checks done. None before enough checks have
// run in their place; then each check left at the pace of its kind: those
// that run in their place at theirs, those a stretch will run ahead at the
// in-place pace until a stretch has run, those that told their result
// ahead at nothing, and one whose time is known beforehand at that.
func TestLeftCountsEachCheckAtThePaceOfItsKind(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	step := func(d time.Duration) func(context.Context) {
		return func(context.Context) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	}
	var a schedule.Ahead
	schedule.SetClock(&a, now)
	key := func(k string) func() string { return func() string { return k } }
	var decl []schedule.Check
	for i := range 25 {
		decl = append(decl, schedule.Check{ID: fmt.Sprintf("place-%d", i), Body: step(200 * time.Millisecond)})
	}
	for i := range 10 {
		decl = append(decl, schedule.Check{ID: fmt.Sprintf("dev-%d", i), Key: key(fmt.Sprintf("d%d", i%2)), Body: step(0)})
	}
	for i := range 5 {
		decl = append(decl, schedule.Check{ID: fmt.Sprintf("late-%d", i), Body: step(200 * time.Millisecond)})
	}
	// A phase whose time is known beforehand (its budget).
	decl = append(decl, schedule.Check{ID: "phase", Body: step(10 * time.Second), Expect: func() time.Duration { return 10 * time.Second }})
	for _, c := range decl {
		a.Declare(c)
	}
	run := func(c schedule.Check, ahead bool) {
		place := trial.Recording()
		place.Run(func() { a.Run(trial.With(context.Background(), place), c.ID, c.Body, func() bool { return ahead }) })
	}
	// Before a pace is measured: the phase's known 10 s, and the other
	// 40 checks of a pace not known yet.
	if e, ok := a.Left(); !ok || e.Unpaced != 40 || e.Left != 10*time.Second {
		t.Errorf("left %+v (%v) before any check ran, want 10s and 40 unpaced", e, ok)
	}
	for _, c := range decl[:5] {
		run(c, false)
	}
	if e, _ := a.Left(); e.Unpaced != 35 || e.Left != 10*time.Second {
		t.Errorf("left %+v after 5 checks in 1 s, too few to measure a pace: want 10s and 35 unpaced", e)
	}
	for _, c := range decl[5:25] {
		run(c, false)
	}
	// 25 checks in place took 5 s: the 5 late ones and the 10 about a
	// device, which no stretch has run yet, at 200 ms each, and the
	// phase's 10 s.
	if e, ok := a.Left(); !ok || e.Unpaced != 0 || e.Left != 13*time.Second {
		t.Errorf("left %+v (%v) after 25 checks in place, want about 13s", e, ok)
	}
	// The first device check runs its stretch ahead, then itself in its
	// place (26 checks in place in 5 s): the other nine are told from
	// what they recorded, at no cost; the 5 late ones are left.
	run(decl[25], true)
	if e, ok := a.Left(); !ok || e.Unpaced != 0 || e.Left != 10*time.Second+5*(5*time.Second/26) {
		t.Errorf("left %+v (%v) once the stretch ran ahead, want about %s", e, ok, 10*time.Second+5*(5*time.Second/26))
	}
	for _, c := range decl[26:40] {
		run(c, true)
	}
	// While the phase runs, what is left of its expected time.
	inPhase := make(chan time.Duration)
	phase := decl[40]
	phase.Body = func(ctx context.Context) {
		step(4 * time.Second)(ctx)
		e, _ := a.Left()
		inPhase <- e.Left
		step(6 * time.Second)(ctx)
	}
	ended := make(chan struct{})
	go func() { defer close(ended); run(phase, true) }()
	if left := <-inPhase; left != 6*time.Second {
		t.Errorf("left %s 4 s into a phase expected to take 10 s, want 6s", left)
	}
	<-ended
	if e, ok := a.Left(); ok {
		t.Errorf("left %+v with every check done", e)
	}
}
