package load

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// Files WriteReport writes in its directory.
const (
	ReportJSON = "load.json"
	ReportHTML = "report.html"
)

//go:embed report.html
var reportPage string

// WriteReport writes the result as JSON (ReportJSON, what Merge reads)
// and as a page for people (ReportHTML): one file, with no script, font
// or style from elsewhere, that shows requests/s, p50 and p99, errors
// and status codes over time and the latency distribution, for all
// requests and per operation, target and shard, with the moments a
// target stopped answering marked.
func WriteReport(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	page, err := ReportPage(res)
	if err != nil {
		return err
	}
	// The page first and the JSON last, each whole or not at all: a merge
	// waiting for the shards' results (load merge --expect) never reads
	// one half written.
	if err := writeWhole(filepath.Join(dir, ReportHTML), page); err != nil {
		return err
	}
	return writeWhole(filepath.Join(dir, ReportJSON), append(b, '\n'))
}

// writeWhole writes a file under a temporary name and renames it.
func writeWhole(path string, b []byte) error { return safefile.WriteFile(path, b, 0o644) }

// ReportPage is the result's report.html.
func ReportPage(res *Result) ([]byte, error) {
	data, err := json.Marshal(reportDataOf(res))
	if err != nil {
		return nil, err
	}
	title := "gwconform load: " + res.Target
	if len(res.Shards) > 0 {
		title = fmt.Sprintf("gwconform load: %d shards, %s", len(res.Shards), res.Target)
	}
	// json.Marshal escapes <, > and &, so the data cannot end the script.
	page := strings.Replace(reportPage, "{{TITLE}}", html.EscapeString(title), 2)
	i := strings.Index(page, "{{DATA}}")
	if i < 0 {
		return nil, errors.New("report.html has no place for its data")
	}
	return []byte(page[:i] + string(data) + page[i+len("{{DATA}}"):]), nil
}

// reportData is what the page's script draws: every figure computed here,
// so that the page needs no histogram code.
type reportData struct {
	Title    string         `json:"title"`
	Summary  []reportField  `json:"summary"`
	Notes    []string       `json:"notes"`
	Width    float64        `json:"width_s"`
	Times    []int64        `json:"times"` // bucket starts, ms since the epoch
	Start    int64          `json:"start"` // ms since the epoch
	End      int64          `json:"end"`
	Groups   []reportGroup  `json:"groups"`
	Series   []reportSeries `json:"series"`
	Statuses []string       `json:"statuses"`
	Outages  []reportOutage `json:"outages"`
}

type reportField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type reportGroup struct {
	Name   string   `json:"name"`
	Series []string `json:"series"`
}

type reportSeries struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// Per bucket: requests/s, errors/s, p50 and p99 in ms (nil without an
	// answered request), and answers by status (Statuses' order) per second.
	RPS []float64 `json:"rps"`
	// NotSent is the turns of the rate's schedule not sent, per second
	// (SeriesAll only; empty when none was skipped).
	NotSent []float64   `json:"not_sent"`
	EPS     []float64   `json:"eps"`
	P50     []*float64  `json:"p50"`
	P99     []*float64  `json:"p99"`
	Status  [][]float64 `json:"status"`
	// Dist is the latency (ms) at each of distPercentiles.
	Dist  []float64   `json:"dist"`
	Table reportTable `json:"table"`
}

type reportTable struct {
	Requests, Errors, NoAnswer int64
	P50, P90, P99, Max, Mean   float64
}

// reportOutage is a target that stopped answering, from the first shard
// to see it until the last to see it answer again (End 0: not before the
// end of the run).
type reportOutage struct {
	Target string   `json:"target"`
	Start  int64    `json:"start"`
	End    int64    `json:"end"`
	Shards []string `json:"shards"`
	Error  string   `json:"error"`
}

// distPercentiles are the points of the latency distribution.
var distPercentiles = []float64{0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100}

func reportDataOf(res *Result) *reportData {
	d := &reportData{Width: res.Timeline.Width.Seconds(), Start: res.Start.UnixMilli(), End: res.Start.Add(res.Elapsed).UnixMilli()}
	rate := "as fast as answered"
	if res.Rate > 0 {
		rate = fmt.Sprintf("%g/s", res.Rate)
	}
	d.Summary = []reportField{
		{"Requests", fmt.Sprint(res.Requests)},
		{"Errors", fmt.Sprintf("%d (%.2f%%)", res.Errors, 100*float64(res.Errors)/math.Max(1, float64(res.Requests)))},
		{"Throughput", fmt.Sprintf("%.1f requests/s", res.Throughput)},
		{"Latency p50 / p99 / max", fmt.Sprintf("%s / %s / %s", ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.Max))},
		{"Duration", res.Elapsed.Round(time.Millisecond).String()},
		{"Started", res.Start.UTC().Format("2006-01-02 15:04:05 UTC")},
		{"Rate asked", rate},
		{"Not sent", notSentText(res)},
		{"Concurrency", fmt.Sprint(res.Concurrency)},
		{"Targets", strings.ReplaceAll(res.Target, ",", ", ")},
	}
	if len(res.Shards) > 0 {
		d.Summary = append(d.Summary, reportField{"Shards", fmt.Sprint(len(res.Shards))})
	} else if res.Shard != "" {
		d.Summary = append(d.Summary, reportField{"Shard", res.Shard})
	}
	if res.Acknowledged > 0 || res.Uncertain > 0 || res.Unanswered > 0 {
		d.Summary = append(d.Summary, reportField{"Ack log", AckCounts(res.Acknowledged, res.Uncertain, res.Unanswered)})
	}
	for _, m := range res.Missing {
		d.Notes = append(d.Notes, "Shard "+m+" is missing from this merge: its requests are not counted.")
	}
	if res.AckLogError != "" {
		d.Notes = append(d.Notes, "The ack log could not be written: "+res.AckLogError)
	}

	// The statuses seen, "no answer" (0) last.
	codes := map[int]bool{}
	for c := range res.Status {
		codes[c] = true
	}
	var statuses []int
	for c := range codes {
		statuses = append(statuses, c)
	}
	sort.Slice(statuses, func(i, j int) bool {
		if (statuses[i] == 0) != (statuses[j] == 0) {
			return statuses[j] == 0
		}
		return statuses[i] < statuses[j]
	})
	for _, c := range statuses {
		if c == 0 {
			d.Statuses = append(d.Statuses, "no answer")
		} else {
			d.Statuses = append(d.Statuses, fmt.Sprint(c))
		}
	}

	for _, b := range res.Timeline.Buckets {
		d.Times = append(d.Times, b.Start.UnixMilli())
	}
	names := SeriesNames(res.Series)
	groups := map[string]*reportGroup{}
	var order []string
	for _, name := range names {
		g, label := "All requests", name
		switch {
		case strings.HasPrefix(name, SeriesOp):
			g, label = "By operation", strings.TrimPrefix(name, SeriesOp)
		case strings.HasPrefix(name, SeriesTarget):
			g, label = "By target", strings.TrimPrefix(name, SeriesTarget)
		case strings.HasPrefix(name, SeriesShard):
			g, label = "By shard", "shard "+strings.TrimPrefix(name, SeriesShard)
		}
		if groups[g] == nil {
			groups[g] = &reportGroup{Name: g}
			order = append(order, g)
		}
		groups[g].Series = append(groups[g].Series, name)
		d.Series = append(d.Series, seriesOf(res, name, label, statuses))
	}
	for _, g := range order {
		d.Groups = append(d.Groups, *groups[g])
	}
	// Every list is one in the JSON, empty rather than null.
	d.Outages = outagesOf(res)
	for _, l := range []*[]string{&d.Notes, &d.Statuses} {
		if *l == nil {
			*l = []string{}
		}
	}
	if d.Outages == nil {
		d.Outages = []reportOutage{}
	}
	if d.Times == nil {
		d.Times = []int64{}
	}
	return d
}

func seriesOf(res *Result, name, label string, statuses []int) reportSeries {
	s := reportSeries{Name: name, Label: label, NotSent: []float64{}}
	runStart, runEnd := res.Start, res.Start.Add(res.Elapsed)
	for _, b := range res.Timeline.Buckets {
		// Per second of the bucket's overlap with the run, so that the
		// first and last buckets, partly outside it, are not shown low.
		from, to := b.Start, b.Start.Add(res.Timeline.Width)
		if from.Before(runStart) {
			from = runStart
		}
		if to.After(runEnd) {
			to = runEnd
		}
		secs := to.Sub(from).Seconds()
		if secs < 0.05 {
			secs = res.Timeline.Width.Seconds()
		}
		t := b.Series[name]
		if t == nil {
			t = &Tally{}
		}
		s.RPS = append(s.RPS, round3(float64(t.Requests)/secs))
		if res.NotSent > 0 && name == SeriesAll {
			s.NotSent = append(s.NotSent, round3(float64(t.NotSent)/secs))
		}
		s.EPS = append(s.EPS, round3(float64(t.Errors)/secs))
		s.P50 = append(s.P50, msOf(&t.Latency, 50))
		s.P99 = append(s.P99, msOf(&t.Latency, 99))
		row := make([]float64, len(statuses))
		for i, c := range statuses {
			row[i] = round3(float64(t.Status[c]) / secs)
		}
		s.Status = append(s.Status, row)
	}
	all := res.Series[name]
	for _, p := range distPercentiles {
		s.Dist = append(s.Dist, float64(all.Latency.Percentile(p))/float64(time.Millisecond))
	}
	l := all.Latency.Latency()
	f := func(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }
	s.Table = reportTable{Requests: all.Requests, Errors: all.Errors, NoAnswer: all.NoAnswer,
		P50: f(l.P50), P90: f(l.P90), P99: f(l.P99), Max: f(l.Max), Mean: f(l.Mean)}
	return s
}

// notSentText says how many turns of the rate's schedule were not sent.
func notSentText(res *Result) string {
	if res.Rate <= 0 {
		return "none (no rate set)"
	}
	if res.NotSent == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (not started in time; never sent later: the rate is a ceiling)", res.NotSent)
}

func msOf(h *Histogram, p float64) *float64 {
	if h.Count() == 0 {
		return nil
	}
	v := round3(float64(h.Percentile(p)) / float64(time.Millisecond))
	return &v
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// outagesOf pairs each target's EventStopped or EventStalled with the
// EventAnswering that ends it; the events of several shards about one target that overlap
// make one outage.
func outagesOf(res *Result) []reportOutage {
	events := append([]Event(nil), res.Events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time.Before(events[j].Time) })
	type key struct{ target, shard string }
	open := map[key]int{} // index in out of the outage a shard's target is in
	var out []reportOutage
	downBy := map[int]map[string]bool{} // outage index: shards still seeing it down
	current := map[string]int{}         // target: its outage still open, if any
	for _, e := range events {
		k := key{e.Target, e.Shard}
		switch e.Kind {
		case EventStopped, EventStalled:
			i, ok := current[e.Target]
			if !ok {
				out = append(out, reportOutage{Target: e.Target, Start: e.Time.UnixMilli(), Error: e.Error})
				i = len(out) - 1
				current[e.Target] = i
				downBy[i] = map[string]bool{}
			}
			open[k] = i
			downBy[i][e.Shard] = true
			if e.Shard != "" && !slices.Contains(out[i].Shards, e.Shard) {
				out[i].Shards = append(out[i].Shards, e.Shard)
			}
		case EventAnswering:
			i, ok := open[k]
			if !ok {
				continue
			}
			delete(open, k)
			delete(downBy[i], e.Shard)
			if len(downBy[i]) == 0 {
				out[i].End = e.Time.UnixMilli()
				delete(current, e.Target)
			}
		}
	}
	for i := range out {
		sort.Slice(out[i].Shards, func(a, b int) bool {
			return shardLess(SeriesShard+out[i].Shards[a], SeriesShard+out[i].Shards[b])
		})
	}
	return out
}
