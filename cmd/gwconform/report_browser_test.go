package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestReportHTMLInChromium opens the report.html of a passing run (the
// embedded simulator) and of a failing one (some 300 failures) in
// Chromium, and fails on any console error or uncaught exception. The page
// opens on the verdict, then the failure cards (the first report.MaxCards
// drawn, the others on demand), and the catalog of every check comes after
// them, drawn when opened: its rows, its filters, a row's details on a
// click. A link to a check (#c-ID) shows its card, or its row of the
// catalog. Screenshots are left in reports/browser/.
func TestReportHTMLInChromium(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"PASS", nil, 0},
		{"FAIL", []string{"--target", manyFailures(t)}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := gwconform(t, c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, c.code, tail(r.stdout))
			}
			var doc report.Document
			b, _ := os.ReadFile(filepath.Join(r.dir, report.JSONFile))
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			var failures []string
			passedID := ""
			for _, res := range doc.Results {
				switch {
				case res.Outcome == report.Failed || res.Outcome == report.Interrupted:
					failures = append(failures, res.ID)
				case res.Outcome == report.Passed && res.Level == "MUST" && passedID == "":
					passedID = res.ID
				}
			}
			page := "file://" + filepath.Join(r.dir, report.HTMLFile)
			ctx, errs := browse(t)

			if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#verdict"))); err != nil {
				t.Fatal(err)
			}
			// The verdict first, then the failures, then the catalog.
			top := evalJS[struct {
				Verdict, Failures, Levels, Catalog float64
				Text, Observer                     string
			}](t, ctx, `(() => { const y = s => document.querySelector(s).getBoundingClientRect().top;
				return {Verdict: y("#verdict"), Failures: y("#failures"), Levels: y("#levels"), Catalog: y("#catalog"),
					Text: document.querySelector("#verdict b").textContent, Observer: document.getElementById("observer").textContent} })()`)
			if top.Text != doc.VerdictLine || !(top.Verdict < top.Failures && top.Failures < top.Levels && top.Levels < top.Catalog) {
				t.Errorf("verdict %q (want %q) at %.0f, failures at %.0f, levels at %.0f, catalog at %.0f: want them in that order",
					top.Text, doc.VerdictLine, top.Verdict, top.Failures, top.Levels, top.Catalog)
			}
			if !strings.HasPrefix(top.Observer, "http://127.0.0.1:") || top.Observer != doc.Observer {
				t.Errorf("the page names the observer %q, report.json %q", top.Observer, doc.Observer)
			}
			cards := func() int { return evalJS[int](t, ctx, `document.querySelectorAll("section.failure").length`) }
			drawn := min(len(failures), report.MaxCards)
			if n := cards(); n != drawn {
				t.Errorf("%d failure cards drawn at once, want %d", n, drawn)
			}
			if len(failures) == 0 {
				if txt := evalJS[string](t, ctx, `document.querySelector("#failures + p").textContent`); txt != "No check failed." {
					t.Errorf("a passing run's failures say %q", txt)
				}
			} else {
				// A card shows the failure, its rule, its exchange and how to send it again.
				card := strings.ToLower(evalJS[string](t, ctx, `document.querySelector("section.failure").innerText`))
				for _, want := range []string{"expected", "got", "request", "response", "curl", "gwconform replay ", "report.json"} {
					if !strings.Contains(card, want) {
						t.Errorf("the first failure card lacks %q:\n%s", want, card)
					}
				}
			}
			if len(failures) > report.MaxCards {
				openLazy(t, ctx, "#more-failures")
				if n := cards(); n != len(failures) {
					t.Errorf("%d failure cards once all are shown, want %d", n, len(failures))
				}
			}
			// The catalog is drawn when opened.
			if n := evalJS[int](t, ctx, `document.querySelectorAll("#all-checks").length`); n != 0 {
				t.Error("the catalog is drawn before it is opened")
			}
			openLazy(t, ctx, "#catalog")
			rows := func() int {
				return evalJS[int](t, ctx, `document.querySelectorAll("#all-checks tr.r:not([hidden])").length`)
			}
			if n := rows(); n != len(doc.Results) {
				t.Errorf("the catalog has %d rows, want %d", n, len(doc.Results))
			}
			tallest := evalJS[float64](t, ctx, `Math.max(...Array.from(document.querySelectorAll("#all-checks tr.r")).map(r => r.getBoundingClientRect().height))`)
			if tallest > 40 {
				t.Errorf("the tallest row of the catalog is %.0f px high, want one line", tallest)
			}
			filter := func(id, value string, want int) {
				evalJS[string](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById(%q); s.value = %q; s.dispatchEvent(new Event("change")); return "" })()`, id, value))
				if n := rows(); n != want {
					t.Errorf("the catalog filtered on %s = %q shows %d rows, want %d", id, value, n, want)
				}
			}
			info := 0
			for _, res := range doc.Results {
				if res.Level == "INFO" {
					info++
				}
			}
			filter("f-level", "INFO", info)
			filter("f-level", "", len(doc.Results))
			if len(failures) > 0 {
				filter("f-outcome", "failed", len(failures))
				filter("f-outcome", "", len(doc.Results))
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#all-checks tr.r`)), chromedp.WaitVisible(chromedp.CSS(`#all-checks tr.r + tr.d`))); err != nil {
				t.Fatal(err)
			}
			shot(t, ctx, "TestReportHTMLInChromium-"+c.name, "header.top")

			// A link to a check: a packed card, else the catalog's row.
			targets := []string{passedID}
			if len(failures) > report.MaxCards {
				targets = append(targets, failures[len(failures)-1])
			}
			for _, id := range targets {
				if err := chromedp.Do(ctx, chromedp.Navigate(page+"#c-"+id), chromedp.WaitVisible(chromedp.CSS("#verdict"))); err != nil {
					t.Fatal(err)
				}
				sel := fmt.Sprintf(`document.getElementById(%q)`, "c-"+id)
				if id == passedID {
					sel = fmt.Sprintf(`document.getElementById(%q)`, "r-c-"+id)
				}
				deadline := time.Now().Add(10 * time.Second)
				for evalJS[bool](t, ctx, `(() => { const e = `+sel+`; return !e || e.hidden || e.getBoundingClientRect().height === 0 })()`) {
					if time.Now().After(deadline) {
						t.Errorf("#c-%s does not show its card or row", id)
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			for _, e := range errs() {
				t.Errorf("console: %s", e)
			}
		})
	}
}

// browse is a Chromium tab for this test and what its console reported as
// errors so far (console.error, uncaught exceptions, error log entries).
func browse(t *testing.T) (context.Context, func() []string) {
	ctx := simtest.Chromium(t, 1400, 1000)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	var mu sync.Mutex
	var errs []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			errs = append(errs, "uncaught: "+e.ExceptionDetails.Text+" "+describe(e.ExceptionDetails.Exception))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, describe(a))
				}
				errs = append(errs, "console."+string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				errs = append(errs, "log: "+e.Entry.Text)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	// chromedp enables the Runtime and Log domains of every tab.
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

func describe(o *runtime.RemoteObject) string {
	switch {
	case o == nil:
		return ""
	case o.Description != "":
		return o.Description
	default:
		return string(o.Value)
	}
}

// openLazy opens a details element drawn on demand and waits until it is.
func openLazy(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel+" > summary")), chromedp.WaitVisible(chromedp.CSS(sel+`[data-loaded="yes"] .lazy-body > *`))); err != nil {
		t.Fatalf("opening %s: %v", sel, err)
	}
}

// shot leaves a screenshot of sel in reports/browser/.
func shot(t *testing.T, ctx context.Context, name, sel string) {
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	out := filepath.Join("..", "..", "reports", "browser")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, name+".png"), png, 0o644)
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
