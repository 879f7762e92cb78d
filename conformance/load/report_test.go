package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// shardedOutage runs a load as two shards over two replicas (in-process
// simulators) for a few seconds, stops the second replica in the middle,
// and returns the merged result and the replica stopped.
func shardedOutage(t *testing.T) (*Result, string) {
	t.Helper()
	f := fleet.Generate(2, 2, 8)
	a := startSim(t, f)
	b := simtest.Start(t, simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var closeOnce sync.Once
	stop := func() { closeOnce.Do(func() { b.Close() }) } // Close once: a second one panics
	t.Cleanup(stop)
	results := make([]*Result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Run(context.Background(), Config{Targets: []string{a.URL(), b.URL()}, Fleet: f, Rate: 400,
				Duration: 3 * time.Second, Concurrency: 2, Shard: i, Shards: 2, Seed: 9, Timeout: 2 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res
		}()
	}
	// Stop the second replica once it has taken a quarter of its share.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, n, _ := b.Server.Journal().Read(0); n >= 150 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, r := range results {
		if r.Requests == 0 || r.Series[SeriesTarget+b.URL()].NoAnswer == 0 {
			t.Fatalf("shard %s: %d requests, series %v", r.Shard, r.Requests, r.Series)
		}
	}
	merged, err := Merge(results)
	if err != nil {
		t.Fatal(err)
	}
	return merged, b.URL()
}

// The report is one file with nothing from elsewhere, and carries the
// figures of every series and the outage.
func TestReportPageIsSelfContained(t *testing.T) {
	res := &Result{Target: "http://u:secret@h:1", Start: time.Unix(1_800_000_000, 0), Elapsed: 2 * time.Second,
		Timeline: Timeline{Width: time.Second}, Series: map[string]*Tally{SeriesAll: {Requests: 1}},
		Events: []Event{{Time: time.Unix(1_800_000_001, 0), Target: "http://h:1", Kind: EventStopped, Error: "</script><b>x"}}}
	page, err := ReportPage(res)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, bad := range []string{"src=", "href=", "@import", "url(", "</script><b>"} {
		if strings.Contains(s, bad) {
			t.Errorf("report.html holds %q: it must be self-contained and the data escaped", bad)
		}
	}
	if !strings.Contains(s, `\u003c/script\u003e`) {
		t.Error("the outage's error is not in the data, escaped")
	}
}

// A real report of two shards over two replicas, one stopped mid-load,
// opened in Chromium: every chart and legend is drawn, per operation,
// target and shard, and the outage is marked on the charts and listed.
// The screenshot is saved under reports/browser/.
func TestReportInChromium(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	res, stopped := shardedOutage(t)
	dir := t.TempDir()
	if err := WriteReport(dir, res); err != nil {
		t.Fatal(err)
	}
	// load.json is what merge reads back.
	b, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back.Requests != res.Requests || len(back.Shards) != 2 {
		t.Fatalf("load.json: %v, %d requests", err, back.Requests)
	}

	ctx := simtest.Chromium(t, 1400, 1000)
	ctx, cancelTime := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTime()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(dir, ReportHTML)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatalf("the report did not draw: %v", err)
	}
	eval := func(expr string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return n
	}
	groups := eval(`document.querySelectorAll("section.group").length`)
	if groups != 4 { // all, by operation, by target, by shard
		t.Errorf("%d groups of charts", groups)
	}
	for _, kind := range []string{"rps", "latency", "errors", "distribution", "status", "table"} {
		if n := eval(fmt.Sprintf(`document.querySelectorAll('section.group [data-chart=%q]').length`, kind)); n != groups {
			t.Errorf("%d charts %s, want one per group", n, kind)
		}
	}
	// Lines are drawn (a path with points) in every chart of the visible group,
	// and the legends name the series.
	if n := eval(`[...document.querySelectorAll('section.group:not([hidden]) svg.chart')].filter(s => s.querySelector('path.series[d^="M"], rect.bar')).length`); n < 5 {
		t.Errorf("only %d charts of the first group have data drawn", n)
	}
	legends := eval(`document.querySelectorAll('section.group .legend span > span').length`)
	if legends < 20 {
		t.Errorf("%d legend entries", legends)
	}
	for _, name := range []string{"command", "update_name", "shard 0/2", "shard 1/2", stopped, "HTTP 200", "no answer"} {
		if n := eval(fmt.Sprintf(`[...document.querySelectorAll('.legend span > span')].filter(e => e.textContent.includes(%q)).length`, name)); n == 0 {
			t.Errorf("no legend names %q", name)
		}
	}
	// The outage: listed, and marked on the time charts of every group.
	if n := eval(fmt.Sprintf(`[...document.querySelectorAll('.outage-item')].filter(e => e.textContent.includes(%q + " stopped answering")).length`, stopped)); n != 1 {
		t.Errorf("%d outage lines name %s", n, stopped)
	}
	if n := eval(`document.querySelectorAll('section.group rect.outage').length`); n < 4*4 {
		t.Errorf("the outage is marked on %d charts", n)
	}
	// The tab of the targets shows its charts.
	tab := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Evaluate[bool](fmt.Sprintf(`[...document.querySelectorAll('#tabs button')].find(b => b.textContent === %q).click(), true`, name))(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	if err := chromedp.Do(ctx, tab("By target"),
		chromedp.WaitVisible(chromedp.CSS(`section.group[data-group="By target"] svg.chart`))); err != nil {
		t.Errorf("the By target tab: %v", err)
	}
	if n := eval(`document.querySelectorAll('section.group:not([hidden])').length`); n != 1 {
		t.Errorf("%d groups shown at once", n)
	}
	if err := chromedp.Do(ctx, tab("All requests")); err != nil {
		t.Error(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join("..", "..", "reports", "browser")
	os.MkdirAll(out, 0o755)
	if err := os.WriteFile(filepath.Join(out, "TestReportInChromium.png"), png, 0o644); err != nil {
		t.Error(err)
	}
	if err := chromedp.Do(ctx, tab("By shard")); err == nil {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(filepath.Join(out, "TestReportInChromium-shards.png"), png, 0o644)
		}
	}
}
