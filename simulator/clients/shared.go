package clients

import (
	"context"
	"maps"
	"sort"
	"sync"
	"time"
)

// Shared keeps the client reports of every replica where each can read
// them (package redisstore, on Redis): each replica folds the clients it
// changed into it every FoldEvery, and the reader merges every
// replica's. An epoch counts the resets, so that a DELETE on one replica
// makes every replica forget its counts.
type Shared interface {
	// Save writes changed, this replica's clients that changed since its
	// last Save, under epoch, and answers the epoch in force; it writes
	// nothing when epoch is not the one in force (a reset elsewhere), and
	// adopts the one in force when epoch is NoEpoch.
	Save(ctx context.Context, epoch uint64, changed []Client) (uint64, error)
	// Load reads every replica's clients of the epoch in force, by
	// replica name.
	Load(ctx context.Context) (map[string][]Client, error)
	// Reset raises the epoch: every replica's clients are forgotten.
	Reset(ctx context.Context) error
}

// NoEpoch is the epoch of a Recorder that has not saved yet.
const NoEpoch = ^uint64(0)

// FoldEvery is how often a replica folds its changed clients into the
// Shared report.
const FoldEvery = time.Second

// sharedTimeout bounds one Save or Load.
const sharedTimeout = 2 * time.Second

// sharing is a Recorder's link to a Shared report.
type sharing struct {
	store   Shared
	replica string
	mu      sync.Mutex // one fold at a time
	epoch   uint64
	full    bool // the next fold saves every client (a save failed)
	// abandon ends the fold in flight and makes Close fold no more (the
	// store does not answer).
	abandon       context.Context
	abandonCancel context.CancelFunc
	stop          chan struct{}
	done          chan struct{}
}

// Share makes the report cover every replica that shares store: this
// Recorder folds its changed clients into it every FoldEvery (and before
// each Report), and Report merges every replica's. Close stops it.
func (r *Recorder) Share(store Shared, replica string) {
	sh := &sharing{store: store, replica: replica, epoch: NoEpoch, stop: make(chan struct{}), done: make(chan struct{})}
	sh.abandon, sh.abandonCancel = context.WithCancel(context.Background())
	r.shared = sh
	go func() {
		defer close(sh.done)
		t := time.NewTicker(FoldEvery)
		defer t.Stop()
		for {
			select {
			case <-sh.stop:
				if sh.abandon.Err() == nil {
					r.fold()
				}
				return
			case <-t.C:
				r.fold()
			}
		}
	}()
}

// Abandon makes Close stop folding without a last fold: the Shared
// store does not answer, and what changed since the last fold is lost.
func (r *Recorder) Abandon() {
	if r.shared != nil {
		r.shared.abandonCancel()
	}
}

// Close stops folding into the Shared report, after one last fold
// (none after Abandon).
func (r *Recorder) Close() {
	if r.shared != nil {
		select {
		case <-r.shared.stop:
		default:
			close(r.shared.stop)
		}
		<-r.shared.done
	}
}

// fold saves the clients changed since the last fold; when another
// replica reset the report, it forgets its own counts.
func (r *Recorder) fold() error {
	sh := r.shared
	sh.mu.Lock()
	defer sh.mu.Unlock()
	epoch := r.epoch.Load()
	own, other := r.snapshot(!sh.full)
	ctx, cancel := context.WithTimeout(sh.abandon, sharedTimeout)
	defer cancel()
	cur, err := sh.store.Save(ctx, sh.epoch, append(own, other...))
	if err != nil {
		sh.full = true
		return err
	}
	sh.full = false
	if sh.epoch != NoEpoch && cur != sh.epoch {
		// Reset on another replica: what this one counted belongs to the
		// report that was forgotten.
		r.resetLocal(epoch)
		sh.full = true
	}
	sh.epoch = cur
	return nil
}

// Reset forgets every client, of every replica when the report is shared.
func (r *Recorder) Reset() {
	r.resetLocal(r.epoch.Load())
	if sh := r.shared; sh != nil {
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		defer cancel()
		sh.store.Reset(ctx)
		// The next fold adopts the new epoch.
		sh.mu.Lock()
		sh.epoch, sh.full = NoEpoch, true
		sh.mu.Unlock()
	}
}

// Scope texts of Report.Scope.
const (
	ScopeProcess  = "this process's requests only"
	ScopeReplicas = "every replica's requests"
)

// sharedReport folds this replica's changes and merges every replica's
// clients; on failure it says so and reports this replica's own.
func (r *Recorder) sharedReport(rep *Report) {
	ferr := r.fold()
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	parts, err := r.shared.store.Load(ctx)
	if err == nil && ferr == nil {
		names := make([]string, 0, len(parts))
		all := make([][]Client, 0, len(parts))
		for _, n := range sortedKeys(parts) {
			names = append(names, n)
			all = append(all, parts[n])
		}
		rep.Clients = merge(all, r.cfg.MaxClients)
		r.recoveries(rep.Clients)
		rep.Scope, rep.Replicas = ScopeReplicas, names
		rep.ScopeNote = "merged from the replicas sharing the store; each folds its counts in every " + FoldEvery.String() +
			", so another replica's latest requests show within that"
		return
	}
	own, other := r.snapshot(false)
	rep.Clients = append(own, other...)
	rep.Scope, rep.Replicas = ScopeProcess, []string{r.shared.replica}
	rep.ScopeNote = "the shared report could not be read, so this is replica " + r.shared.replica + "'s alone"
}

func sortedKeys(m map[string][]Client) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// clientKey names a client across replicas: its id, or its name when it
// has none (no api_key, other clients).
func clientKey(c Client) string {
	if c.ID != "" {
		return "id:" + c.ID
	}
	return "name:" + c.Client
}

// merge adds up the clients of several replicas, bounded as one
// Recorder is: at most maxClients with a report of their own (the rest,
// fewest requests first, join OtherClients), maxCodes error codes and
// maxPhases phases each.
func merge(parts [][]Client, maxClients int) []Client {
	byKey := map[string]*Client{}
	var order []string
	for _, part := range parts {
		for _, c := range part {
			k := clientKey(c)
			if m, ok := byKey[k]; ok {
				mergeClient(m, c)
				continue
			}
			cp := c
			cp.Coverage = append([]Coverage{}, c.Coverage...)
			cp.Errors = append([]ErrorCount{}, c.Errors...)
			cp.Judgements = append([]Judgement(nil), c.Judgements...)
			cp.Phases = clonePhases(c.Phases)
			if c.Skew != nil {
				s := *c.Skew
				cp.Skew = &s
			}
			byKey[k] = &cp
			order = append(order, k)
		}
	}
	var own []Client
	var other *Client
	for _, k := range order {
		c := byKey[k]
		if c.Client == OtherClients && c.ID == "" {
			other = c
			continue
		}
		own = append(own, *c)
	}
	if len(own) > maxClients {
		// Those with the most requests keep a report of their own.
		sort.SliceStable(own, func(i, j int) bool { return own[i].Requests > own[j].Requests })
		for _, c := range own[maxClients:] {
			if other == nil {
				o := Client{Client: OtherClients, Coverage: []Coverage{}, Errors: []ErrorCount{}, Phases: []Phase{}, Judgements: c.Judgements}
				for i := range o.Judgements {
					o.Judgements[i] = Judgement{ID: c.Judgements[i].ID, Name: c.Judgements[i].Name, Passed: true}
				}
				o.Judgements = append([]Judgement(nil), o.Judgements...)
				other = &o
			}
			mergeClient(other, c)
		}
		own = own[:maxClients]
	}
	sortClients(own)
	out := append([]Client{}, own...)
	if other != nil {
		out = append(out, *other)
	}
	for i := range out {
		out[i].fillUntried()
	}
	return out
}

func clonePhases(ps []Phase) []Phase {
	out := make([]Phase, len(ps))
	for i, p := range ps {
		out[i] = p
		out[i].Codes = maps.Clone(p.Codes)
	}
	return out
}

// mergeClient adds b's counts to a's; the latest of each example, breach
// and skew is the one seen last.
func mergeClient(a *Client, b Client) {
	bLater := mergeSpan(a, b)
	mergeCoverage(a, b.Coverage)
	mergeErrors(a, b.Errors)
	mergeJudgements(a, b.Judgements)
	mergeSkew(a, b.Skew, bLater)
	mergePhases(a, b.Phases)
}

// mergeSpan widens a's first and last request to b's and adds b's
// totals; bLater says b's last request is the later one.
func mergeSpan(a *Client, b Client) (bLater bool) {
	if a.Requests == 0 || (!b.First.IsZero() && b.First.Before(a.First)) {
		a.First = b.First
	}
	bLater = b.Last.After(a.Last)
	if bLater {
		a.Last = b.Last
	}
	a.Requests += b.Requests
	a.SignFailures += b.SignFailures
	a.ForeignFields += b.ForeignFields
	return bLater
}

// mergeCoverage adds b's coverage to a's, by operation, type and format,
// in that order.
func mergeCoverage(a *Client, b []Coverage) {
	cov := map[[3]string]int{}
	for i, c := range a.Coverage {
		cov[[3]string{c.Operation, c.Type, c.Format}] = i
	}
	for _, c := range b {
		if i, ok := cov[[3]string{c.Operation, c.Type, c.Format}]; ok {
			a.Coverage[i].Sent += c.Sent
			a.Coverage[i].Succeeded += c.Succeeded
			continue
		}
		a.Coverage = append(a.Coverage, c)
	}
	sort.Slice(a.Coverage, func(i, j int) bool {
		x, y := a.Coverage[i], a.Coverage[j]
		if x.Operation != y.Operation {
			return x.Operation < y.Operation
		}
		if x.Type != y.Type {
			return x.Type < y.Type
		}
		return x.Format < y.Format
	})
}

// mergeErrors adds b's error counts to a's by code, keeping the latest
// example of each; beyond maxCodes codes they count as "other". The most
// frequent come first.
func mergeErrors(a *Client, b []ErrorCount) {
	errs := map[string]int{}
	for i, e := range a.Errors {
		errs[e.Code] = i
	}
	for _, e := range b {
		i, ok := errs[e.Code]
		if !ok && len(a.Errors) >= maxCodes {
			i, ok = errs["other"]
			if !ok {
				a.Errors = append(a.Errors, ErrorCount{Code: "other"})
				i, ok = len(a.Errors)-1, true
				errs["other"] = i
			}
		}
		if !ok {
			a.Errors = append(a.Errors, e)
			errs[e.Code] = len(a.Errors) - 1
			continue
		}
		x := &a.Errors[i]
		x.Count += e.Count
		if e.Latest.Time.After(x.Latest.Time) {
			x.Latest, x.Status = e.Latest, e.Status
		}
	}
	sort.Slice(a.Errors, func(i, j int) bool {
		if a.Errors[i].Count != a.Errors[j].Count {
			return a.Errors[i].Count > a.Errors[j].Count
		}
		return a.Errors[i].Code < a.Errors[j].Code
	})
}

// mergeJudgements adds b's violations to a's judgements of the same rule,
// keeping the latest breach.
func mergeJudgements(a *Client, b []Judgement) {
	for i := range a.Judgements {
		for _, j := range b {
			if j.ID != a.Judgements[i].ID {
				continue
			}
			x := &a.Judgements[i]
			x.Violations += j.Violations
			x.Passed = x.Violations == 0
			if j.LatestTime > x.LatestTime { // RFC 3339 in UTC: ordered as text
				x.Latest, x.LatestTime = j.Latest, j.LatestTime
			}
		}
	}
}

// mergeSkew widens a's clock skew to b's; the last skew is b's when b's
// last request is the later one.
func mergeSkew(a *Client, b *Skew, bLater bool) {
	if b == nil {
		return
	}
	if a.Skew == nil {
		s := *b
		a.Skew = &s
		return
	}
	a.Skew.Samples += b.Samples
	a.Skew.MinSeconds = min(a.Skew.MinSeconds, b.MinSeconds)
	a.Skew.MaxSeconds = max(a.Skew.MaxSeconds, b.MaxSeconds)
	if bLater {
		a.Skew.LastSeconds = b.LastSeconds
	}
}

// mergePhases adds each of b's scenario phases to a's of the same name,
// or keeps it as a phase of its own while a has fewer than maxPhases.
func mergePhases(a *Client, b []Phase) {
	for _, p := range b {
		found := false
		for i := range a.Phases {
			if a.Phases[i].Phase != p.Phase {
				continue
			}
			found = true
			addPhase(&a.Phases[i], p)
		}
		if !found && len(a.Phases) < maxPhases {
			cp := p
			cp.Codes = maps.Clone(p.Codes)
			a.Phases = append(a.Phases, cp)
		}
	}
}

// addPhase adds p's counts to x, the same phase: the latency's extremes
// and the average of the two averages, the quickest recovery, and codes
// up to maxCodes.
func addPhase(x *Phase, p Phase) {
	x.Requests += p.Requests
	x.Errors += p.Errors
	x.RetriedEarly += p.RetriedEarly
	for k, n := range p.Devices {
		if x.Devices == nil {
			x.Devices = map[string]uint64{}
		}
		x.Devices[k] += n
	}
	if l := p.Latency; l != nil {
		if x.Latency == nil {
			c := *l
			x.Latency = &c
		} else {
			x.Latency.MinMS, x.Latency.MaxMS = min(x.Latency.MinMS, l.MinMS), max(x.Latency.MaxMS, l.MaxMS)
			x.Latency.AvgMS = (x.Latency.AvgMS + l.AvgMS) / 2 // each replica's average, weighed alike
		}
	}
	if r := p.Recovery; r != nil && r.Recovered && (x.Recovery == nil || !x.Recovery.Recovered || r.AfterMS < x.Recovery.AfterMS) {
		c := *r
		x.Recovery = &c
	}
	if x.Codes == nil {
		x.Codes = map[string]uint64{}
	}
	for code, n := range p.Codes {
		if _, ok := x.Codes[code]; ok || len(x.Codes) < maxCodes {
			x.Codes[code] += n
		}
	}
}
