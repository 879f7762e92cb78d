package load

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Series of a Result and of each bucket of its Timeline: every request is
// counted in SeriesAll, in its operation's ("op:command") and in its
// target's ("target:http://…"); a merged result adds each shard's
// ("shard:1/4").
const (
	SeriesAll    = "all"
	SeriesOp     = "op:"
	SeriesTarget = "target:"
	SeriesShard  = "shard:"
)

// Tally is what one series got, over the run or one time bucket.
type Tally struct {
	Requests int64 `json:"requests"`
	// Errors counts the requests that did not get success; NoAnswer those
	// of them that got no complete answer.
	Errors   int64 `json:"errors"`
	NoAnswer int64 `json:"no_answer"`
	// NotSent (SeriesAll only) counts the turns of the rate's schedule
	// due in the bucket that were not sent (Result.NotSent).
	NotSent int64 `json:"not_sent,omitempty"`
	// Status counts answers by HTTP status; 0 counts those without one.
	Status map[int]int64 `json:"status"`
	// Latency is the time to an answer of the answered requests.
	Latency Histogram `json:"latency"`
}

// Add adds o's counts to t.
func (t *Tally) Add(o *Tally) {
	t.Requests += o.Requests
	t.Errors += o.Errors
	t.NoAnswer += o.NoAnswer
	t.NotSent += o.NotSent
	for k, v := range o.Status {
		if t.Status == nil {
			t.Status = map[int]int64{}
		}
		t.Status[k] += v
	}
	t.Latency.Merge(&o.Latency)
}

// Timeline is the run cut in buckets of equal width, aligned on the Unix
// epoch (so that the buckets of shards run on different machines line up
// when merged).
type Timeline struct {
	// Width is one bucket's: a second, or a power of two of seconds when
	// the run is long (at most maxBuckets buckets).
	Width time.Duration `json:"width_ns"`
	// Buckets are in time order; a bucket without requests is left out.
	Buckets []*Bucket `json:"buckets"`
}

// Bucket is the requests started within [Start, Start+Width), by series.
type Bucket struct {
	Start  time.Time         `json:"start"`
	Series map[string]*Tally `json:"series"`
}

// maxBuckets bounds a timeline: past it the width doubles.
const maxBuckets = 300

// timeline collects the workers' buckets while a run lasts: each worker
// counts the current bucket on its own and adds it here under the lock
// when its requests move to the next one.
type timeline struct {
	mu      sync.Mutex
	width   atomic.Int64 // seconds
	buckets map[int64]map[string]*Tally
}

func newTimeline() *timeline {
	tl := &timeline{buckets: map[int64]map[string]*Tally{}}
	tl.width.Store(1)
	return tl
}

// add adds a worker's bucket that started at start (Unix seconds).
func (tl *timeline) add(start int64, names []string, series []wtally) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	w := tl.width.Load()
	key := start - start%w
	b := tl.buckets[key]
	if b == nil {
		b = map[string]*Tally{}
		tl.buckets[key] = b
	}
	for i := range series {
		s := &series[i]
		if s.requests == 0 {
			continue
		}
		t := b[names[i]]
		if t == nil {
			t = &Tally{Status: map[int]int64{}}
			b[names[i]] = t
		}
		t.Requests += s.requests
		t.Errors += s.errors
		t.NoAnswer += s.noAnswer
		for k, v := range s.status {
			if v > 0 {
				t.Status[k] += v
			}
		}
		t.Latency.addDense(s.hist)
	}
	tl.coarsen()
}

// addNotSent counts a turn of the schedule due in second sec (Unix) that
// was not sent, in SeriesAll.
func (tl *timeline) addNotSent(sec int64) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	w := tl.width.Load()
	key := sec - sec%w
	b := tl.buckets[key]
	if b == nil {
		b = map[string]*Tally{}
		tl.buckets[key] = b
	}
	t := b[SeriesAll]
	if t == nil {
		t = &Tally{Status: map[int]int64{}}
		b[SeriesAll] = t
	}
	t.NotSent++
	tl.coarsen()
}

// coarsen doubles the width until the buckets span at most maxBuckets.
func (tl *timeline) coarsen() {
	for {
		w := tl.width.Load()
		lo, hi := int64(1<<62), int64(-1<<62)
		for k := range tl.buckets {
			lo, hi = min(lo, k), max(hi, k)
		}
		if len(tl.buckets) == 0 || (hi-lo)/w < maxBuckets {
			return
		}
		w *= 2
		tl.width.Store(w)
		old := tl.buckets
		tl.buckets = make(map[int64]map[string]*Tally, len(old)/2+1)
		for k, b := range old {
			nk := k - k%w
			into := tl.buckets[nk]
			if into == nil {
				tl.buckets[nk] = b
				continue
			}
			mergeSeries(into, b)
		}
	}
}

func mergeSeries(into, from map[string]*Tally) {
	for name, t := range from {
		if cur := into[name]; cur != nil {
			cur.Add(t)
		} else {
			c := &Tally{}
			c.Add(t)
			into[name] = c
		}
	}
}

// result is the timeline in time order.
func (tl *timeline) result() Timeline {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := Timeline{Width: time.Duration(tl.width.Load()) * time.Second}
	for k, b := range tl.buckets {
		out.Buckets = append(out.Buckets, &Bucket{Start: time.Unix(k, 0).UTC(), Series: b})
	}
	sort.Slice(out.Buckets, func(i, j int) bool { return out.Buckets[i].Start.Before(out.Buckets[j].Start) })
	return out
}

// wtally is one series of a worker's current bucket.
type wtally struct {
	requests, errors, noAnswer int64
	status                     [600]int64 // by HTTP status; 0 is no answer
	hist                       *hdrhistogram.Histogram
}

// wbucket is a worker's current bucket: series[0] is SeriesAll, then one
// per operation, then one per target (run.seriesNames).
type wbucket struct {
	start, end int64 // Unix seconds
	series     []wtally
}

func newWBucket(n int) wbucket {
	b := wbucket{start: -1, series: make([]wtally, n)}
	for i := range b.series {
		b.series[i] = wtally{hist: newDenseHist()}
	}
	return b
}

// count counts one request started at sec in the series given.
func (b *wbucket) count(tl *timeline, names []string, sec int64, a answer, took time.Duration, series ...int) {
	if sec >= b.end || sec < b.start {
		b.flush(tl, names)
		w := tl.width.Load()
		b.start = sec - sec%w
		b.end = b.start + w
	}
	for _, i := range series {
		s := &b.series[i]
		s.requests++
		if a.status >= 0 && a.status < len(s.status) {
			s.status[a.status]++
		}
		if !a.ok {
			s.errors++
			if a.err != nil {
				s.noAnswer++
			}
		}
		if a.err == nil {
			s.hist.RecordValue(toMicros(took))
		}
	}
}

// flush adds the bucket to the timeline and empties it.
func (b *wbucket) flush(tl *timeline, names []string) {
	if b.start < 0 {
		return
	}
	tl.add(b.start, names, b.series)
	for i := range b.series {
		s := &b.series[i]
		if s.requests > 0 {
			s.requests, s.errors, s.noAnswer = 0, 0, 0
			s.status = [600]int64{}
			s.hist.Reset()
		}
	}
	b.start = -1
}

// Event is a moment a target stopped answering (a request got no answer
// after the last one answered) or answered again.
type Event struct {
	Time   time.Time `json:"time"`
	Target string    `json:"target"`
	// Kind is EventStopped, EventStalled or EventAnswering.
	Kind string `json:"kind"`
	// Shard is the shard that saw it, in a merged result.
	Shard string `json:"shard,omitempty"`
	// Error is why the first request got no answer (EventStopped).
	Error string `json:"error,omitempty"`
}

// Kinds of Event.
const (
	EventStopped = "stopped_answering"
	// EventStalled: the target answered nothing for StallAfter while
	// requests to it were in flight (dated from its last answer).
	EventStalled   = "stalled"
	EventAnswering = "answering_again"
)

// SeriesNames lists a result's series in the order a report shows them:
// all, the operations, the targets, the shards.
func SeriesNames(m map[string]*Tally) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	rank := func(s string) int {
		switch {
		case s == SeriesAll:
			return 0
		case strings.HasPrefix(s, SeriesOp):
			return 1
		case strings.HasPrefix(s, SeriesTarget):
			return 2
		}
		return 3
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return shardLess(names[i], names[j])
	})
	return names
}

// shardLess orders "shard:2/4" before "shard:10/12" and other names by text.
func shardLess(a, b string) bool {
	ia, _, oka := ParseShard(strings.TrimPrefix(a, SeriesShard))
	ib, _, okb := ParseShard(strings.TrimPrefix(b, SeriesShard))
	if oka == nil && okb == nil && strings.HasPrefix(a, SeriesShard) && strings.HasPrefix(b, SeriesShard) {
		return ia < ib
	}
	return a < b
}

// ParseShard reads "I/N", shard I (from 0) of N.
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, errI := strconv.Atoi(a)
	n, errN := strconv.Atoi(b)
	if !ok || errI != nil || errN != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("shard %q is not I/N with 0 <= I < N (I counts from 0)", s)
	}
	return i, n, nil
}
