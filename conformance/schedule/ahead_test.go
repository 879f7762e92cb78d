package schedule_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/conformance/schedule"
	"github.com/gwdmi/gwtools/conformance/trial"
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
