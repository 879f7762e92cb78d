package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestReportHTMLInChromium opens the report.html of a real run with
// failures in Chromium: the "All checks" table filters by outcome, level,
// device type, format and text, its rows are one line high and show their
// details on a click, and the INFO row's counts sit under their headers.
// The screenshot is left in reports/browser/.
func TestReportHTMLInChromium(t *testing.T) {
	t.Parallel()
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	r := gwconform(t, "--target", acceptsDimming101(t))
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, tail(r.stdout))
	}
	var doc struct {
		Results []struct {
			ID, Level, Outcome, Format, Title string
			DeviceType                        string `json:"device_type"`
		} `json:"results"`
	}
	b, _ := os.ReadFile(filepath.Join(r.dir, "report.json"))
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	count := func(keep func(id, level, outcome, format, typ string) bool) int {
		n := 0
		for _, res := range doc.Results {
			if res.Title == "" {
				t.Errorf("%s has no title in report.json", res.ID)
			}
			if keep(res.ID, res.Level, res.Outcome, res.Format, res.DeviceType) {
				n++
			}
		}
		return n
	}

	ctx := simtest.Chromium(t, 1400, 1000)
	ctx, cancelTime := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTime()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(r.dir, "report.html")), chromedp.WaitVisible(chromedp.CSS("#all-checks"))); err != nil {
		t.Fatal(err)
	}
	// shown lists the visible rows' data and the count line.
	type row struct{ ID, Outcome, Level, Type, Format string }
	shown := func() ([]row, string) {
		rows := evalJS[[]row](t, ctx, `Array.from(document.querySelectorAll("#all-checks tr.r")).filter(r => !r.hidden).map(r => ({ID: r.cells[0].textContent, Outcome: r.dataset.outcome, Level: r.dataset.level, Type: r.dataset.type, Format: r.dataset.format}))`)
		return rows, evalJS[string](t, ctx, `document.getElementById("f-count").textContent`)
	}
	choose := func(id, value string) {
		evalJS[string](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById(%q); s.value = %q; s.dispatchEvent(new Event("change")); return s.value })()`, id, value))
	}

	// One line a row: the tallest of ~2,000 rows.
	tallest := evalJS[float64](t, ctx, `Math.max(...Array.from(document.querySelectorAll("#all-checks tr.r")).map(r => r.getBoundingClientRect().height))`)
	if tallest > 40 {
		t.Errorf("the tallest row of All checks is %.0f px high, want one line", tallest)
	}
	// The INFO row's "ran" under Passed, its failures under Failed.
	offset := evalJS[struct{ Ran, Failed float64 }](t, ctx, `(() => {
		const table = document.querySelector("#levels + table");
		const head = Array.from(table.rows[0].cells);
		const info = Array.from(table.rows).find(r => r.cells[0].textContent.trim() === "INFO");
		const col = name => head.find(c => c.textContent.trim() === name).getBoundingClientRect();
		const at = i => info.cells[i].getBoundingClientRect();
		const ran = Array.from(info.cells).findIndex(c => /ran$/.test(c.textContent.trim()));
		return {Ran: Math.abs(at(ran).left - col("Passed").left) + Math.abs(at(ran).right - col("Passed").right),
			Failed: Math.abs(at(ran+1).left - col("Failed").left) + Math.abs(at(ran+1).right - col("Failed").right)};
	})()`)
	if offset.Ran > 1 || offset.Failed > 1 {
		t.Errorf("the INFO row's counts are not under Passed and Failed (off by %.0f and %.0f px)", offset.Ran, offset.Failed)
	}

	// Each filter alone, then all at once; the count line agrees.
	cases := []struct {
		id, value string
		keep      func(id, level, outcome, format, typ string) bool
	}{
		{"f-outcome", "failed", func(_, _, o, _, _ string) bool { return o == "failed" }},
		{"f-level", "SHOULD", func(_, l, _, _, _ string) bool { return l == "SHOULD" }},
		{"f-type", "Thermostat", func(_, _, _, _, ty string) bool { return ty == "Thermostat" }},
		{"f-format", "xml", func(_, _, _, f, _ string) bool { return f == "xml" }},
	}
	for _, c := range cases {
		choose(c.id, c.value)
		rows, line := shown()
		want := count(c.keep)
		if len(rows) != want || want == 0 || line != fmt.Sprintf("%d of %d shown", want, len(doc.Results)) {
			t.Errorf("%s = %s: %d rows shown (%q), want %d", c.id, c.value, len(rows), line, want)
		}
		choose(c.id, "")
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#f-text"), "dimming.101")); err != nil {
		t.Fatal(err)
	}
	rows, _ := shown()
	if want := count(func(id, _, _, _, _ string) bool { return strings.Contains(id, "dimming.101") }); len(rows) < want || want == 0 {
		t.Errorf("text dimming.101: %d rows shown, want at least %d", len(rows), want)
	}
	for _, r := range rows {
		if !strings.Contains(r.ID, "dimming.101") {
			t.Errorf("text dimming.101 shows %s", r.ID)
		}
	}
	choose("f-outcome", "failed")
	choose("f-format", "json")
	rows, _ = shown()
	if len(rows) == 0 {
		t.Error("failed, json and dimming.101 together show nothing")
	}
	for _, r := range rows {
		if r.Outcome != "failed" || r.Format != "json" || !strings.Contains(r.ID, "dimming.101") {
			t.Errorf("failed, json and dimming.101 together show %+v", r)
		}
	}
	// Details on demand: a click on the row shows its assertion.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#all-checks tr.r:not([hidden])`)), chromedp.WaitVisible(chromedp.CSS(`#all-checks tr.r:not([hidden]) + tr.d`))); err != nil {
		t.Fatal(err)
	}
	details, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#all-checks tr.r:not([hidden]) + tr.d`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(details, "Assertion") || !strings.Contains(details, "MUST NOT be answered with success") {
		t.Errorf("the row's details: %q", details)
	}
	// Screenshots to look at: the filtered table with a row opened, and
	// the counts per level.
	shot := func(name, sel string) {
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
		if err != nil {
			t.Logf("screenshot %s: %v", name, err)
			return
		}
		out := filepath.Join("..", "..", "reports", "browser")
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, name+".png"), png, 0o644)
	}
	evalJS[string](t, ctx, `(() => { const s = document.getElementById("f-outcome"); s.value = ""; s.dispatchEvent(new Event("change")); return "" })()`)
	shot("TestReportHTMLInChromium-all-checks", "#report-all")
	shot("TestReportHTMLInChromium-levels", "#levels + table")
}

// evalJS evaluates js in the page and returns its value.
func evalJS[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%.80s: %v", js, err)
	}
	return v
}
