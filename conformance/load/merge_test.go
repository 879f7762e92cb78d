package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// sample is one request as a run counts it.
type sample struct {
	at     time.Time
	took   time.Duration
	op     device.Operation
	target int
	a      answer
}

// resultOf counts samples exactly as Run's workers do (one worker each
// per shard) and returns the result as written to JSON and read back.
func resultOf(t *testing.T, samples []sample, targets []string, shard, shards int) *Result {
	t.Helper()
	r := &run{cfg: Config{Concurrency: 1, Shard: shard, Shards: shards}, targets: targets, timeline: newTimeline(),
		down: make([]atomic.Bool, len(targets))}
	r.seriesNames = []string{SeriesAll}
	for op := device.SendCommand; op <= device.UpdateName; op++ {
		r.seriesNames = append(r.seriesNames, SeriesOp+op.Name())
	}
	for _, n := range targets {
		r.seriesNames = append(r.seriesNames, SeriesTarget+n)
	}
	w := &worker{run: r, failures: map[string]int64{}, perTarget: make([]TargetResult, len(targets)), bucket: newWBucket(len(r.seriesNames))}
	r.workers = []*worker{w}
	r.start = samples[0].at
	for _, s := range samples {
		w.req.op, w.req.format = s.op, device.JSON
		w.count(s.a, s.target, s.at, s.took)
		r.noteTarget(s.target, s.a)
	}
	w.bucket.flush(r.timeline, r.seriesNames)
	res := r.result(r.workers, strings.Join(targets, ","), samples[len(samples)-1].at.Sub(samples[0].at))
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

// Merging four shards' results gives the single run's figures over the
// same requests: the same counts, the same percentiles (overall, per
// operation, per target and per time bucket), which are those of all the
// latencies together within the histogram's precision.
func TestMergeEqualsOneRunOverTheSameRequests(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	targets := []string{"http://a:1", "http://b:2"}
	start := time.Unix(1_800_000_000, 0)
	var all []sample
	var shards [4][]sample
	var lat []time.Duration
	for i := range 8000 {
		s := sample{at: start.Add(time.Duration(i) * time.Millisecond), op: device.Operations[rng.IntN(3)], target: i % 2,
			took: time.Duration(50+rng.ExpFloat64()*400) * time.Microsecond * time.Duration(1+i%7), a: answer{status: 200, ok: true}}
		switch {
		case i > 4000 && i < 4500 && s.target == 1:
			s.a = answer{err: errors.New("refused")}
		case i%97 == 0:
			s.a = answer{status: 401, code: "bad_signature"}
		}
		all = append(all, s)
		shards[i%4] = append(shards[i%4], s)
		if s.a.err == nil {
			lat = append(lat, s.took)
		}
	}
	one := resultOf(t, all, targets, 0, 0)
	var parts []*Result
	for i := range shards {
		parts = append(parts, resultOf(t, shards[i], targets, i, 4))
	}
	merged, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Requests != 8000 || merged.Requests != one.Requests || merged.Errors != one.Errors || merged.Status[401] != one.Status[401] ||
		merged.Status[0] != one.Status[0] || len(merged.Shards) != 4 || len(merged.Missing) != 0 {
		t.Fatalf("merged %d requests, %d errors, status %v, %d shards; one run %d, %d, %v", merged.Requests, merged.Errors, merged.Status,
			len(merged.Shards), one.Requests, one.Errors, one.Status)
	}
	if len(merged.Targets) != 2 || merged.Targets[1].NoAnswer != one.Series[SeriesTarget+targets[1]].NoAnswer || merged.Targets[1].NoAnswer == 0 ||
		merged.Targets[0].Requests+merged.Targets[1].Requests != 8000 {
		t.Errorf("merged targets %+v", merged.Targets)
	}
	if merged.Latency != one.Latency {
		t.Errorf("latency merged %+v, one run %+v", merged.Latency, one.Latency)
	}
	slices.Sort(lat)
	for _, p := range []float64{50, 90, 99, 99.9} {
		exact := lat[int(p/100*float64(len(lat)))-1]
		got := merged.Series[SeriesAll].Latency.Percentile(p)
		if d := float64(got-exact) / float64(exact); d < -HistogramPrecision || d > HistogramPrecision {
			t.Errorf("p%v: merged %s, exact %s", p, got, exact)
		}
	}
	for name, s := range one.Series {
		m := merged.Series[name]
		if m == nil || m.Requests != s.Requests || m.Errors != s.Errors || m.NoAnswer != s.NoAnswer || m.Latency.Latency() != s.Latency.Latency() {
			t.Errorf("series %s: merged %+v, one run %+v", name, m, s)
		}
	}
	for i := range 4 {
		if s := merged.Series[fmt.Sprintf("shard:%d/4", i)]; s == nil || s.Requests != 2000 {
			t.Errorf("shard %d/4: %+v", i, s)
		}
	}
	if len(merged.Timeline.Buckets) != len(one.Timeline.Buckets) || len(one.Timeline.Buckets) != 8 {
		t.Fatalf("timeline: merged %d buckets, one run %d", len(merged.Timeline.Buckets), len(one.Timeline.Buckets))
	}
	for i, b := range one.Timeline.Buckets {
		mb := merged.Timeline.Buckets[i]
		for name, s := range b.Series {
			m := mb.Series[name]
			if !mb.Start.Equal(b.Start) || m == nil || m.Requests != s.Requests || m.Latency.Percentile(99) != s.Latency.Percentile(99) ||
				m.Latency.Percentile(50) != s.Latency.Percentile(50) || m.Status[0] != s.Status[0] {
				t.Errorf("bucket %s series %s: merged %+v, one run %+v", b.Start, name, m, s)
			}
		}
	}
	// Target b stopped answering and answered again: seen by every shard.
	if len(one.Events) != 2 || len(merged.Events) != 4 || merged.Events[0].Kind != EventStopped || merged.Events[0].Shard == "" {
		t.Errorf("events: one run %+v, merged %+v", one.Events, merged.Events)
	}

	// A shard twice, shards of two loads, a merge merged again, a missing shard.
	if _, err := Merge([]*Result{parts[0], parts[0]}); err == nil {
		t.Error("shard 0/4 twice: no error")
	}
	other := resultOf(t, shards[1], targets, 1, 3)
	if _, err := Merge([]*Result{parts[0], other}); err == nil {
		t.Error("shards 0/4 and 1/3: no error")
	}
	if _, err := Merge([]*Result{merged}); err == nil {
		t.Error("a merge merged again: no error")
	}
	if m, err := Merge(parts[:3]); err != nil || !slices.Equal(m.Missing, []string{"3/4"}) {
		t.Errorf("three of four: %v, missing %v", err, m.Missing)
	}
}
