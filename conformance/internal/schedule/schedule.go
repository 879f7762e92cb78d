// Package schedule decides who runs what, when: given a run's tasks, each
// naming what it touches, it runs those that touch one thing one after
// another, in the order given, and the things side by side. It knows
// nothing of checks, requests or reports: what a task does, and how many
// requests may be in flight at once, are its caller's.
package schedule

import (
	"sort"
	"sync"
	"time"
)

// Task is one unit of work: Key names what it touches (a device, a
// gateway's messages); tasks of one key run one after another, in the
// order given.
type Task struct {
	ID  string
	Key string
	Run func()
}

// Chains runs tasks: those of one key one after another in the order
// given, the keys side by side. It returns when every task has run, with
// the progress of each key's chain.
func Chains(tasks []Task) *Progress {
	p := newProgress(tasks)
	p.Run(tasks)
	return p
}

// Progress is how far each key's chain has come, read while the chains
// run (Longest) and after.
type Progress struct {
	mu     sync.Mutex
	start  time.Time
	chains map[string]*chain
	order  []string
}

type chain struct {
	total, done int
	ended       time.Time
}

// NewProgress counts the tasks of each key, before Run.
func NewProgress(tasks []Task) *Progress { return newProgress(tasks) }

func newProgress(tasks []Task) *Progress {
	p := &Progress{chains: map[string]*chain{}}
	for _, t := range tasks {
		c := p.chains[t.Key]
		if c == nil {
			c = &chain{}
			p.chains[t.Key] = c
			p.order = append(p.order, t.Key)
		}
		c.total++
	}
	return p
}

// Run runs tasks as Chains does, counting them in p.
func (p *Progress) Run(tasks []Task) {
	byKey := map[string][]Task{}
	for _, t := range tasks {
		byKey[t.Key] = append(byKey[t.Key], t)
	}
	p.mu.Lock()
	p.start = time.Now()
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range p.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, t := range byKey[k] {
				t.Run()
				p.mu.Lock()
				c := p.chains[k]
				c.done++
				if c.done == c.total {
					c.ended = time.Now()
				}
				p.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// Chains is how many chains there are: one per key.
func (p *Progress) Chains() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.chains)
}

// Done is how many tasks have run.
func (p *Progress) Done() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.chains {
		n += c.done
	}
	return n
}

// minChainPaced is how many of a chain's tasks end before its own pace
// is taken for the rest, and minPaced how many of all the chains' tasks
// end before any pace is: a chain's first tasks (a far device's first
// answers, a read before its first change, a wait for the clock) say
// little of the others, which go together.
const (
	minChainPaced = 5
	minPaced      = 50
)

// Chain is one key's chain as far as it has come: Left is its expected
// time to its end (0 once it has ended, or while no pace is known:
// Unknown).
type Chain struct {
	Key         string
	Done, Total int
	Took, Left  time.Duration
	Unknown     bool
}

// Longest is the chain expected to end last: the critical path of the
// tasks run side by side. Once minPaced tasks have ended, a chain is
// expected at its own pace when minChainPaced of its tasks have ended,
// before that at the mean pace of the chains that have; otherwise its
// time left is not known (Unknown, and it is taken to end last). False
// before any task has run.
func (p *Progress) Longest() (Chain, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		return Chain{}, false
	}
	now := time.Now()
	var paces time.Duration
	paced, done := 0, 0
	for _, c := range p.chains {
		done += c.done
		if c.done >= minChainPaced && c.ended.IsZero() {
			paces += now.Sub(p.start) / time.Duration(c.done)
			paced++
		}
	}
	known := done >= minPaced
	keys := append([]string(nil), p.order...)
	sort.Strings(keys)
	var best Chain
	found := false
	for _, k := range keys {
		c := p.chains[k]
		ch := Chain{Key: k, Done: c.done, Total: c.total, Took: now.Sub(p.start)}
		switch {
		case !c.ended.IsZero():
			ch.Took = c.ended.Sub(p.start)
		case known && c.done >= minChainPaced:
			ch.Left = time.Duration(float64(ch.Took) / float64(c.done) * float64(c.total-c.done))
		case known && paced > 0:
			ch.Left = paces / time.Duration(paced) * time.Duration(c.total-c.done)
		default:
			ch.Left, ch.Unknown = time.Duration(1<<62-1), true // taken to end last
		}
		later := ch.Took+ch.Left > best.Took+best.Left
		if ch.Unknown && best.Unknown {
			later = ch.Total-ch.Done > best.Total-best.Done // the most left
		}
		if !found || later {
			best, found = ch, true
		}
	}
	if best.Unknown {
		best.Left = 0
	}
	return best, found
}

// N runs jobs, n at a time, and waits for them; n of 1 or less runs
// them one after another, in order.
func N(jobs []func(), n int) {
	if n <= 1 {
		for _, j := range jobs {
			j()
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			j()
		}()
	}
	wg.Wait()
}

// Trips counts, per key, the round trips made one after another on what
// the key names, and how long they took. However many requests a run
// sends together, its wall time is bounded below by the key with the
// most: its critical path.
type Trips struct {
	mu  sync.Mutex
	per map[string]*trips
}

type trips struct {
	n    int
	took time.Duration
}

// Add counts n round trips one after another on key, taking took.
func (t *Trips) Add(key string, n int, took time.Duration) {
	if key == "" || n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.per == nil {
		t.per = map[string]*trips{}
	}
	tr := t.per[key]
	if tr == nil {
		tr = &trips{}
		t.per[key] = tr
	}
	tr.n += n
	tr.took += took
}

// Longest is the key with the most round trips one after another (the
// first in order among equals), with their count and time.
func (t *Trips) Longest() (key string, n int, took time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.per))
	for k := range t.per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !ok || t.per[k].n > t.per[key].n {
			key, ok = k, true
		}
	}
	if !ok {
		return "", 0, 0, false
	}
	return key, t.per[key].n, t.per[key].took, true
}
