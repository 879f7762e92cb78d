package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

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

// shards runs a load as n shards (one load without shards when n is 1)
// over the targets for d, the shards at once, and returns their results.
func shards(f *fleet.Fleet, targets []string, n int, d time.Duration) ([]*Result, error) {
	results := make([]*Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := Config{Targets: targets, Fleet: f, Rate: 300, Duration: d, Concurrency: 2, Seed: 5, Timeout: 2 * time.Second}
			if n > 1 {
				cfg.Shard, cfg.Shards = i, n
			}
			results[i], errs[i] = Run(context.Background(), cfg)
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// outageLoad starts two replicas (in-process simulators) and returns a
// load to run: n shards (merged when n > 1) over both for 2 s, the second
// replica stopped once it has answered its first requests (at most 0.7 s
// in). It gives the
// result and the replica stopped.
func outageLoad(t *testing.T, n int) func() (*Result, string, error) {
	t.Helper()
	f := fleet.Generate(2, 2, 8)
	a := startSim(t, f)
	b := simtest.Start(t, simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var closeOnce sync.Once
	stop := func() { closeOnce.Do(func() { b.Close() }) } // Close once: a second one panics
	t.Cleanup(stop)
	return func() (*Result, string, error) {
		go func() {
			// After its first requests, or a third of the run on a slow
			// machine, whichever comes first: mid-run either way.
			deadline := time.Now().Add(700 * time.Millisecond)
			for {
				if _, got, _ := b.Server.Journal().Read(0); got >= 30 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			stop()
		}()
		results, err := shards(f, []string{a.URL(), b.URL()}, n, 2*time.Second)
		if err != nil {
			return nil, "", err
		}
		for _, r := range results {
			if r.Requests == 0 || r.Series[SeriesTarget+b.URL()].NoAnswer == 0 {
				return nil, "", fmt.Errorf("shard %q: %d requests, the stopped replica answered all: %v", r.Shard, r.Requests, r.Series)
			}
		}
		if n == 1 {
			return results[0], b.URL(), nil
		}
		merged, err := Merge(results)
		return merged, b.URL(), err
	}
}

// reportCase is one load report and what its page must show.
type reportCase struct {
	name     string
	res      *Result
	groups   []string // the tabs, in order
	outage   string   // the target listed as stopped, "" for none
	legends  []string // names the legends must show
	summary  []string // cards the summary must show
	wantPNG  bool     // keep a screenshot under reports/browser/
	pngShard bool     // and one of the By shard tab
}

// The load report of each kind of run, opened in Chromium: no outage (the
// usual case), a target that stops answering, one shard of a spread load,
// a merge of shards without and with an outage. In each, the page logs
// no console error and throws nothing, every chart and table of every
// group is drawn with data, the outage is listed and marked on the charts
// only where there was one, and no summary card breaks a word in the
// middle. Screenshots are saved under reports/browser/.
func TestLoadReportInChromium(t *testing.T) {
	simtest.Heavy(t)
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	f := fleet.Generate(2, 2, 8)
	a, b := startSim(t, f), startSim(t, f)
	single, sharded := outageLoad(t, 1), outageLoad(t, 2)
	// The five loads at once.
	var (
		wg                  sync.WaitGroup
		one, two            []*Result
		outage, outageTwo   *Result
		stopped, stoppedTwo string
		errs                = make([]error, 4)
	)
	wg.Add(4)
	go func() { defer wg.Done(); one, errs[0] = shards(f, []string{a.URL()}, 1, time.Second) }()
	go func() { defer wg.Done(); two, errs[1] = shards(f, []string{a.URL(), b.URL()}, 2, time.Second) }()
	go func() { defer wg.Done(); outage, stopped, errs[2] = single() }()
	go func() { defer wg.Done(); outageTwo, stoppedTwo, errs[3] = sharded() }()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	merged, err := Merge(two)
	if err != nil {
		t.Fatal(err)
	}
	cases := []reportCase{
		{name: "no outage", res: one[0], groups: []string{"All requests", "By operation", "By target"},
			legends: []string{"command", "message", "update_name", "HTTP 200", a.URL()}, summary: []string{"Requests", "Targets"}, wantPNG: true},
		{name: "outage", res: outage, groups: []string{"All requests", "By operation", "By target"},
			outage: stopped, legends: []string{"HTTP 200", "no answer", stopped}, summary: []string{"Requests", "Targets"}},
		{name: "shard", res: two[0], groups: []string{"All requests", "By operation", "By target"},
			legends: []string{"HTTP 200", a.URL(), b.URL()}, summary: []string{"Shard"}},
		{name: "merge", res: merged, groups: []string{"All requests", "By operation", "By target", "By shard"},
			legends: []string{"shard 0/2", "shard 1/2", a.URL()}, summary: []string{"Shards"}},
		{name: "merge with outage", res: outageTwo, groups: []string{"All requests", "By operation", "By target", "By shard"},
			outage: stoppedTwo, legends: []string{"command", "update_name", "shard 0/2", "shard 1/2", stoppedTwo, "HTTP 200", "no answer"},
			summary: []string{"Shards"}, wantPNG: true, pngShard: true},
	}

	browser, stopBrowser, err := simtest.StartChromium(1400, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer stopBrowser()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkReportPage(t, browser, c) })
	}
}

func checkReportPage(t *testing.T, browser context.Context, c reportCase) {
	dir := t.TempDir()
	if err := WriteReport(dir, c.res); err != nil {
		t.Fatal(err)
	}
	// load.json is what merge reads back.
	b, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back.Requests != c.res.Requests || len(back.Shards) != len(c.res.Shards) {
		t.Fatalf("load.json: %v, %d requests", err, back.Requests)
	}

	tabCtx, closeTab := chromedp.NewContext(browser)
	defer closeTab()
	ctx, cancelTime := context.WithTimeout(tabCtx, 60*time.Second)
	defer cancelTime()
	errs := simtest.ConsoleErrors(ctx)
	drawn, cancelDrawn := context.WithTimeout(ctx, 15*time.Second)
	loadErr := chromedp.Do(drawn, chromedp.Navigate("file://"+filepath.Join(dir, ReportHTML)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)))
	cancelDrawn()
	if loadErr != nil {
		t.Errorf("the report did not draw: %v (console: %q)", loadErr, errs())
		return
	}
	// What the page shows, read in one go.
	js, err := chromedp.Run(ctx, chromedp.Evaluate[string](pageFigures))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Tabs    []string
		Charts  map[string]int
		Groups  map[string]struct{ Charts, Empty, Series, Rows int }
		Summary []string
		Legends []string
		Outages []string
		Marks   int
		Broken  string
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	if strings.Join(p.Tabs, "|") != strings.Join(c.groups, "|") {
		t.Errorf("tabs %q, want %q", p.Tabs, c.groups)
	}
	groups := len(p.Groups)
	if groups != len(c.groups) {
		t.Errorf("%d groups of charts, want %d", groups, len(c.groups))
	}
	for _, kind := range []string{"rps", "latency", "errors", "distribution", "status", "table"} {
		if p.Charts[kind] != groups {
			t.Errorf("%d charts %s, want one per group", p.Charts[kind], kind)
		}
	}
	// Every chart of every group has its lines or bars drawn, and every
	// table a row per series with a request count.
	for _, g := range c.groups {
		x := p.Groups[g]
		if x.Charts < 5 || x.Empty != 0 {
			t.Errorf("group %s: %d charts, %d without data drawn", g, x.Charts, x.Empty)
		}
		if x.Series == 0 || x.Rows != x.Series {
			t.Errorf("group %s: %d table rows with requests for %d series", g, x.Rows, x.Series)
		}
	}
	if len(p.Summary) < 8 {
		t.Errorf("%d summary cards: %q", len(p.Summary), p.Summary)
	}
	for _, name := range c.summary {
		if !slices.Contains(p.Summary, name) {
			t.Errorf("no summary card %q in %q", name, p.Summary)
		}
	}
	for _, name := range c.legends {
		if !slices.ContainsFunc(p.Legends, func(l string) bool { return strings.Contains(l, name) }) {
			t.Errorf("no legend names %q", name)
		}
	}
	// The outage: listed, and marked on the time charts of every group
	// (four of them: requests, latency, errors, the status of at least one
	// series); none where no target stopped.
	if c.outage == "" {
		if len(p.Outages) != 0 || p.Marks != 0 {
			t.Errorf("no target stopped, yet %d outages listed and %d marked", len(p.Outages), p.Marks)
		}
	} else {
		if len(p.Outages) != 1 || !strings.Contains(p.Outages[0], c.outage+" stopped answering") {
			t.Errorf("outages listed: %q, want one naming %s", p.Outages, c.outage)
		}
		if p.Marks < 4*groups {
			t.Errorf("the outage is marked on %d charts", p.Marks)
		}
	}
	// No summary card breaks a word that fits on its line in the middle.
	if p.Broken != "" {
		t.Errorf("summary cards break words in the middle: %s", p.Broken)
	}
	// Each tab shows its group alone.
	tab := func(name string) chromedp.Action[int] {
		return chromedp.Evaluate[int](fmt.Sprintf(`[...document.querySelectorAll('#tabs button')].find(b => b.textContent === %q).click(),
			[...document.querySelectorAll('section.group')].filter(s => !s.hidden && s.dataset.group === %q && s.querySelector('svg.chart').getBoundingClientRect().width > 0).length * 10 +
			document.querySelectorAll('section.group:not([hidden])').length`, name, name))
	}
	for _, g := range append(c.groups[1:], c.groups[0]) {
		if n, err := chromedp.Run(ctx, tab(g)); err != nil || n != 11 {
			t.Errorf("the %s tab: %v, %d (want its group shown, alone)", g, err, n)
		}
	}
	if c.wantPNG {
		screenshot(t, ctx, "")
		if c.pngShard {
			if _, err := chromedp.Run(ctx, tab("By shard")); err == nil {
				screenshot(t, ctx, "-shards")
			}
		}
	}
	if e := errs(); len(e) > 0 {
		t.Errorf("the page logged errors: %q", e)
	}
}

// pageFigures is what checkReportPage reads of the page, as JSON.
const pageFigures = `JSON.stringify((() => {
  const all = s => [...document.querySelectorAll(s)];
  const charts = {};
  all('section.group [data-chart]').forEach(e => { charts[e.dataset.chart] = (charts[e.dataset.chart] || 0) + 1; });
  const groups = {};
  all('section.group').forEach(g => {
    const svgs = [...g.querySelectorAll('svg.chart')];
    groups[g.dataset.group] = {
      Charts: svgs.length,
      Empty: svgs.filter(s => !s.querySelector('path.series[d^="M"], rect.bar')).length,
      Series: g.querySelectorAll('[data-chart=status] svg.chart').length,
      Rows: [...g.querySelectorAll('[data-chart=table] tr')].filter(r => r.querySelector('td') && +r.children[1].textContent > 0).length,
    };
  });
  return {
    Tabs: all('#tabs button').map(b => b.textContent),
    Charts: charts,
    Groups: groups,
    Summary: all('#summary b').map(b => b.textContent),
    Legends: all('.legend span > span').map(e => e.textContent),
    Outages: all('.outage-item').map(e => e.textContent),
    Marks: all('section.group rect.outage').length,
    Broken: ` + brokenWords + `,
  };
})())`

// brokenWords lists the words of the summary cards that wrap inside
// although they would fit on a line of their card.
const brokenWords = `(() => {
  const bad = [];
  document.querySelectorAll('#summary span').forEach(span => {
    const node = span.firstChild;
    if (!node) return;
    const text = node.textContent, width = span.getBoundingClientRect().width;
    let at = 0;
    text.split(" ").forEach(word => {
      const r = document.createRange();
      r.setStart(node, at); r.setEnd(node, at + word.length);
      at += word.length + 1;
      const lines = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
      if (word && r.getBoundingClientRect().width <= width && lines.size > 1) bad.push(word);
    });
  });
  return bad.join(", ");
})()`

// screenshot keeps the page as reports/browser/<test><suffix>.png.
func screenshot(t *testing.T, ctx context.Context, suffix string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Error(err)
		return
	}
	out := filepath.Join("..", "..", "reports", "browser")
	os.MkdirAll(out, 0o755)
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + suffix + ".png"
	if err := os.WriteFile(filepath.Join(out, name), png, 0o644); err != nil {
		t.Error(err)
	}
}
