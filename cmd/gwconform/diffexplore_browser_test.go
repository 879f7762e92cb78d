package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/conformance/diff"
	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// openPage opens a report page in Chromium and returns the page's context
// and a function that lists every console error, uncaught exception and
// failed load the page has had.
func openPage(t *testing.T, browser context.Context, path, waitFor string) (context.Context, func() []string) {
	t.Helper()
	ctx, closeTab := chromedp.NewContext(browser) // a tab of its own
	t.Cleanup(closeTab)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel)
	errs := simtest.ConsoleErrors(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS(waitFor))); err != nil {
		t.Fatal(err)
	}
	return ctx, errs
}

// screenshot saves the page into reports/browser/name.
func screenshot(t *testing.T, ctx context.Context, name string) {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "reports", "browser")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExploreHTMLInChromium: explore.html of a run that lists findings
// below --fail-on, and of one that stopped at a finding, opens without a
// console error; its findings table has a row per finding, with its
// level, rule and reproduction, and the stopping finding's steps show.
func TestExploreHTMLInChromium(t *testing.T) {
	t.Parallel()
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	browser := simtest.Chromium(t, 1400, 1000)
	url := refusesLowerCaseEnums(t)
	dir := t.TempDir()
	if code, out, errs := exploreRun(t, "--target", url, "--operations", "400", "--seed", "3", "--report-dir", dir); code != report.ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	ef := readExplore(t, dir)
	ctx, errors := openPage(t, browser, filepath.Join(dir, explore.HTMLName), "#findings")
	rows := evalJS[[]string](t, ctx, `Array.from(document.querySelectorAll("#findings tr")).slice(1).map(r => r.cells[1].textContent + " " + r.cells[2].querySelector("code").textContent + " " + r.cells[6].textContent)`)
	if len(rows) != len(ef.Findings) || len(rows) == 0 {
		t.Errorf("%d rows in the findings table, want %d", len(rows), len(ef.Findings))
	}
	for i, r := range rows {
		if f := ef.Findings[min(i, len(ef.Findings)-1)]; !strings.Contains(r, f.Level) || !strings.Contains(r, f.Rule) || !strings.Contains(r, f.Script) {
			t.Errorf("row %d %q does not show %s %s %s", i+1, r, f.Level, f.Rule, f.Script)
		}
	}
	// The listener hears an error the page makes (so an empty list means
	// something).
	evalJS[bool](t, ctx, `(() => { setTimeout(() => console.error("probe"), 0); return true })()`)
	if e := errors(); len(e) != 1 || !strings.Contains(e[0], "probe") {
		t.Fatalf("the console listener did not hear the probe: %v", e)
	}
	ctx, errors = openPage(t, browser, filepath.Join(dir, explore.HTMLName), "#findings")
	if h := evalJS[string](t, ctx, `document.querySelector("h2").textContent`); !strings.Contains(h, "PASS at --fail-on MUST") {
		t.Errorf("the verdict reads %q", h)
	}
	if e := errors(); len(e) > 0 {
		t.Errorf("console errors: %v", e)
	}
	screenshot(t, ctx, "explore-findings.png")

	// A run that stopped: its shrunk steps, the disagreeing one marked.
	dir = t.TempDir()
	if code, out, errs := exploreRun(t, "--target", ignoresFifthCommand(t), "--operations", "3000", "--seed", "9", "--report-dir", dir); code != report.ExitFail {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	ef = readExplore(t, dir)
	ctx, errors = openPage(t, browser, filepath.Join(dir, explore.HTMLName), "h2.fail")
	steps := evalJS[int](t, ctx, `document.querySelectorAll("table")[0].querySelectorAll("tr").length - 1`)
	bad := evalJS[int](t, ctx, `document.querySelectorAll("tr.bad").length`)
	if steps != len(ef.Found.Steps) || bad < 1 {
		t.Errorf("%d step rows (%d marked), want %d with the disagreeing one marked", steps, bad, len(ef.Found.Steps))
	}
	if e := errors(); len(e) > 0 {
		t.Errorf("console errors: %v", e)
	}
}

// TestDiffHTMLInChromium: diff.html of a comparison with a difference and
// of one without opens without a console error; the summary has a row
// per difference, each card shows both exchanges side by side, the shrunk
// sequence and the replay command. The screenshot is docs/diff-html.png's
// source.
func TestDiffHTMLInChromium(t *testing.T) {
	t.Parallel()
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	browser := simtest.Chromium(t, 1400, 1000)
	v1, v2 := deviantSim(t, ""), deviantSim(t, "accepts-dimming-101")
	dir := t.TempDir()
	if code, out, errs := diffRun(t, "--target", v1, "--target", v2, "--operations", "500", "--seed", "11", "--report-dir", dir); code != report.ExitFail {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	rep, err := diff.ReadFile(filepath.Join(dir, diff.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	ctx, errors := openPage(t, browser, filepath.Join(dir, diff.HTMLName), "#summary")
	if n := evalJS[int](t, ctx, `document.querySelectorAll("#summary tr").length - 1`); n != len(rep.Differences) {
		t.Errorf("%d summary rows, want %d", n, len(rep.Differences))
	}
	for i, x := range rep.Differences {
		card := evalJS[struct {
			A, B, Replay string
			Steps, Width int
		}](t, ctx, fmt.Sprintf(`(() => { const c = document.getElementById("d%d");
			const ex = c.querySelector("table.exchanges"); const r = ex.rows[1];
			return {A: r.cells[0].textContent, B: r.cells[1].textContent, Replay: c.querySelector("p:last-child code").textContent,
				Steps: c.querySelectorAll("table.steps tr").length - 1,
				Width: Math.round(Math.abs(r.cells[0].getBoundingClientRect().width - r.cells[1].getBoundingClientRect().width))}; })()`, i+1))
		if !strings.Contains(card.A, x.A.Answer) || !strings.Contains(card.B, x.B.Answer) || card.Replay != "sh "+x.Script || card.Steps != len(x.Steps) || card.Width > 2 {
			t.Errorf("card %d: %+v, want A %q B %q, %d steps, sh %s, columns of one width", i+1, card, x.A.Answer, x.B.Answer, len(x.Steps), x.Script)
		}
	}
	if e := errors(); len(e) > 0 {
		t.Errorf("console errors: %v", e)
	}
	screenshot(t, ctx, "diff.png")

	dir = t.TempDir()
	if code, out, errs := diffRun(t, "--target", v1, "--target", deviantSim(t, ""), "--operations", "150", "--seed", "2", "--report-dir", dir); code != report.ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	ctx, errors = openPage(t, browser, filepath.Join(dir, diff.HTMLName), "h2.same")
	if h := evalJS[string](t, ctx, `document.getElementById("verdict").textContent`); !strings.Contains(h, "SAME") {
		t.Errorf("the verdict reads %q", h)
	}
	if e := errors(); len(e) > 0 {
		t.Errorf("console errors: %v", e)
	}
}
