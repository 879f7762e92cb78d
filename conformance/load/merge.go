package load

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Merge combines the results of shards of one load (each a Run with
// Config.Shards, usually on its own machine) into one: counts add up, the
// span is from the first start to the last end, and the percentiles are
// those of every request together, since the histograms merge exactly.
// Each shard's own counts stay as series "shard:I/N" and in Shards. The
// shards must be distinct; a result of Merge is not merged again.
// Missing names the shards of N absent from results.
func Merge(results []*Result) (*Result, error) {
	if len(results) == 0 {
		return nil, errors.New("no result to merge")
	}
	m := &merger{out: &Result{Status: map[int]int64{}, Failures: map[string]int64{}, Operations: map[string]int64{},
		Series: map[string]*Tally{}}, seen: map[string]bool{}, targetSeen: map[string]bool{}, vias: map[string]bool{},
		width: time.Second}
	for i, r := range results {
		label, err := m.admit(i, r)
		if err != nil {
			return nil, err
		}
		m.add(label, r)
	}
	m.summarize()
	m.order()
	m.mergeTimeline(results)
	return m.out, nil
}

// merger is the merged result as the shards' results come in, and what
// is needed to check that they are distinct shards of one load.
type merger struct {
	out *Result
	// seen holds the shard labels merged; total is N of their "I/N" (0:
	// no result named its shard).
	seen  map[string]bool
	total int
	// targets are the targets in the order first met.
	targets    []string
	targetSeen map[string]bool
	vias       map[string]bool
	// end is the last shard's end; width the widest timeline bucket.
	end   time.Time
	width time.Duration
}

// admit checks that results[i] can be merged: not a merge itself, a shard
// of the same load as the others and not one already merged, with a
// timeline. It returns the shard's label ("#i" when it has none).
func (m *merger) admit(i int, r *Result) (label string, err error) {
	if len(r.Shards) > 0 {
		return "", fmt.Errorf("result %d is already a merge of %d shards: merge the shards' own results", i+1, len(r.Shards))
	}
	label = r.Shard
	if label == "" {
		label = fmt.Sprintf("#%d", i+1)
	} else {
		_, n, err := ParseShard(label)
		if err != nil {
			return "", fmt.Errorf("result %d: %w", i+1, err)
		}
		if m.total != 0 && n != m.total {
			return "", fmt.Errorf("result %d is shard %s, another is of %d shards: not one load", i+1, label, m.total)
		}
		m.total = n
	}
	if m.seen[label] {
		return "", fmt.Errorf("shard %s twice", label)
	}
	m.seen[label] = true
	if w := r.Timeline.Width; w <= 0 || w%time.Second != 0 {
		return "", fmt.Errorf("result %d (shard %s) has no timeline: written by an older gwconform?", i+1, label)
	}
	return label, nil
}

// add adds a shard's counts, series and events to the merged result, and
// keeps the shard, without its timeline, in Shards.
func (m *merger) add(label string, r *Result) {
	out := m.out
	m.width = max(m.width, r.Timeline.Width)
	for _, t := range strings.Split(r.Target, ",") {
		if !m.targetSeen[t] && t != "" {
			m.targetSeen[t] = true
			m.targets = append(m.targets, t)
		}
	}
	m.vias[r.Via] = true
	out.Rate += r.Rate
	out.Concurrency += r.Concurrency
	out.Requests += r.Requests
	out.NotSent += r.NotSent
	out.Errors += r.Errors
	out.Acknowledged += r.Acknowledged
	out.Uncertain += r.Uncertain
	out.Unanswered += r.Unanswered
	if r.AckLogError != "" {
		out.AckLogError = strings.TrimPrefix(out.AckLogError+"; ", "; ") + "shard " + label + ": " + r.AckLogError
	}
	if out.Start.IsZero() || r.Start.Before(out.Start) {
		out.Start = r.Start
	}
	if e := r.Start.Add(r.Elapsed); e.After(m.end) {
		m.end = e
	}
	for k, v := range r.Status {
		out.Status[k] += v
	}
	for k, v := range r.Failures {
		out.Failures[k] += v
	}
	for k, v := range r.Operations {
		out.Operations[k] += v
	}
	mergeSeries(out.Series, r.Series)
	if all := r.Series[SeriesAll]; all != nil {
		mergeSeries(out.Series, map[string]*Tally{SeriesShard + label: all})
	}
	for _, e := range r.Events {
		e.Shard = label
		out.Events = append(out.Events, e)
	}
	shard := *r
	shard.Shard, shard.Timeline, shard.Events = label, Timeline{}, nil
	out.Shards = append(out.Shards, &shard)
}

// summarize derives what does not add up from the merged counts: the
// targets, the way of sending ("mixed" when the shards differ), the span,
// the throughput and the latency of every request together.
func (m *merger) summarize() {
	out := m.out
	out.Target = strings.Join(m.targets, ",")
	if len(m.targets) > 1 { // from the series: a shard with one target has no Targets
		for _, u := range m.targets {
			tr := TargetResult{URL: u}
			if s := out.Series[SeriesTarget+u]; s != nil {
				tr.Requests, tr.Errors, tr.NoAnswer = s.Requests, s.Errors, s.NoAnswer
			}
			out.Targets = append(out.Targets, tr)
		}
	}
	for v := range m.vias {
		if out.Via != "" {
			out.Via = "mixed"
			break
		}
		out.Via = v
	}
	out.Elapsed = m.end.Sub(out.Start)
	if out.Elapsed > 0 {
		out.Throughput = float64(out.Requests) / out.Elapsed.Seconds()
	}
	if all := out.Series[SeriesAll]; all != nil {
		out.Latency = all.Latency.Latency()
	}
}

// order sorts the events by time and the shards by number, and names the
// shards of the load that are missing.
func (m *merger) order() {
	out := m.out
	sort.SliceStable(out.Events, func(i, j int) bool { return out.Events[i].Time.Before(out.Events[j].Time) })
	sort.Slice(out.Shards, func(i, j int) bool {
		return shardLess(SeriesShard+out.Shards[i].Shard, SeriesShard+out.Shards[j].Shard)
	})
	if m.total > 0 {
		out.Shard = ""
		for i := range m.total {
			if l := fmt.Sprintf("%d/%d", i, m.total); !m.seen[l] {
				out.Missing = append(out.Missing, l)
			}
		}
	}
}

// mergeTimeline merges the shards' timelines: each shard's buckets in the
// widest width, its SeriesAll also as its shard's series.
func (m *merger) mergeTimeline(results []*Result) {
	out := m.out
	buckets := map[int64]map[string]*Tally{}
	w := int64(m.width / time.Second)
	for i, r := range results {
		label := out.Shards[indexOfShard(out.Shards, results, i)].Shard
		for _, b := range r.Timeline.Buckets {
			k := b.Start.Unix()
			k -= k % w
			into := buckets[k]
			if into == nil {
				into = map[string]*Tally{}
				buckets[k] = into
			}
			mergeSeries(into, b.Series)
			if all := b.Series[SeriesAll]; all != nil {
				mergeSeries(into, map[string]*Tally{SeriesShard + label: all})
			}
		}
	}
	out.Timeline.Width = m.width
	for k, b := range buckets {
		out.Timeline.Buckets = append(out.Timeline.Buckets, &Bucket{Start: time.Unix(k, 0).UTC(), Series: b})
	}
	sort.Slice(out.Timeline.Buckets, func(i, j int) bool { return out.Timeline.Buckets[i].Start.Before(out.Timeline.Buckets[j].Start) })
}

// indexOfShard finds, in the sorted shards, the one made of results[i].
func indexOfShard(shards []*Result, results []*Result, i int) int {
	label := results[i].Shard
	if label == "" {
		label = fmt.Sprintf("#%d", i+1)
	}
	for j, s := range shards {
		if s.Shard == label {
			return j
		}
	}
	return 0
}
