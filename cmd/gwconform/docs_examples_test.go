package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

var update = flag.Bool("update", false, "TestDocsExampleSummaries: rewrite the docs' example summaries from real runs (make docs-examples)")

// docsExample is a console example of the docs that a real run writes:
// the fenced block after the line <!-- docs-example: Name --> in File.
type docsExample struct {
	File, Name string
	// Run runs gwconform in dir and returns its console and the URLs to
	// write as the docs name them.
	Run func(t *testing.T, dir string) (string, map[string]string)
}

// exampleSeed is the seed of the example runs: the docs name it.
const exampleSeed = "1795395875"

// TestDocsExampleSummaries: the example summaries in docs/usage.md and
// docs/certification.md are what gwconform run prints: each is run again
// and compared, its duration aside. With -update (make docs-examples) the
// docs are rewritten from the runs: after a change of the catalog or of
// the verdicts, run it and commit the docs.
func TestDocsExampleSummaries(t *testing.T) {
	simtest.Heavy(t)
	examples := []docsExample{
		{"usage.md", "first-run", func(t *testing.T, dir string) (string, map[string]string) {
			return console(t, dir, "run", "--seed", exampleSeed, "--report-dir", "reports/latest"), nil
		}},
		{"certification.md", "fail", func(t *testing.T, dir string) (string, map[string]string) {
			// A target that accepts a dimming of 101, above the published
			// range, and its observer: the same simulator behind them.
			sim := simulator.New(simulator.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			h := sim.Server.Handler()
			dimming101 := regexp.MustCompile(`"dimming":"101"|<dimming>101</dimming>`)
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				if dimming101.Match(body) {
					success(w, r)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(target.Close)
			observer := httptest.NewServer(h)
			t.Cleanup(observer.Close)
			out := console(t, dir, "run", "--seed", exampleSeed, "--report-dir", "reports/latest", "--target", target.URL, "--observer", observer.URL)
			return out, map[string]string{target.URL: "https://staging.example.com", observer.URL: "http://127.0.0.1:9090"}
		}},
	}
	for _, ex := range examples {
		t.Run(ex.Name, func(t *testing.T) {
			path := filepath.Join("..", "..", "docs", ex.File)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			start, end, err := exampleBlock(string(b), ex.Name)
			if err != nil {
				t.Fatalf("%s: %v", ex.File, err)
			}
			out, urls := ex.Run(t, t.TempDir())
			got := summaryOf(out, urls)
			if *update {
				doc := string(b[:start]) + got + string(b[end:])
				if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if have := string(b[start:end]); maskDuration(have) != maskDuration(got) {
				t.Errorf("docs/%s's example %q is stale: rerun make docs-examples (or go test ./cmd/gwconform -run TestDocsExampleSummaries -update).\nIt says:\n%s\nA run prints:\n%s", ex.File, ex.Name, have, got)
			}
		})
	}
}

// console runs gwconform in dir and returns its stdout.
func console(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.gwconform, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	return string(out)
}

var (
	port     = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	progress = regexp.MustCompile(`^gwconform: (\d+/\d+ checks done|checking against)`)
	// scheduled are the summary's lines on how the run was scheduled
	// (critical path, checks run ahead): printed only when the target
	// answered in 5 ms or more, which a target on loopback does too on a
	// loaded machine. The docs' examples show the verdicts, not them.
	scheduled   = regexp.MustCompile(`^  (critical path|run ahead): `)
	runDuration = regexp.MustCompile(`(seed \d+, )[0-9.]+(µs|ms|s|m[0-9.]+s)`)
)

// summaryOf is the console as the docs show it: without the progress lines
// (their times vary) or the lines on how the run was scheduled
// (scheduled), with the URLs named as the docs name them and the embedded
// simulator's port fixed.
func summaryOf(out string, urls map[string]string) string {
	var names []string
	for from, to := range urls {
		out = strings.ReplaceAll(out, from, "\x00"+strconv.Itoa(len(names))+"\x00")
		names = append(names, to)
	}
	out = port.ReplaceAllString(out, "http://127.0.0.1:40315")
	for i, to := range names {
		out = strings.ReplaceAll(out, "\x00"+strconv.Itoa(i)+"\x00", to)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if !progress.MatchString(l) && !scheduled.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n") + "\n"
}

func maskDuration(s string) string { return runDuration.ReplaceAllString(s, "${1}D") }

// exampleBlock finds the body of the fenced block after the marker of the
// example name: the bytes from start to end are the example's lines.
func exampleBlock(doc, name string) (start, end int, err error) {
	marker := "<!-- docs-example: " + name + " -->"
	i := strings.Index(doc, marker)
	if i < 0 {
		return 0, 0, errNoExample(marker)
	}
	open := strings.Index(doc[i:], "```text\n")
	if open < 0 {
		return 0, 0, errNoExample(marker + " followed by ```text")
	}
	start = i + open + len("```text\n")
	closeAt := strings.Index(doc[start:], "\n```")
	if closeAt < 0 {
		return 0, 0, errNoExample("the end of the block after " + marker)
	}
	return start, start + closeAt + 1, nil
}

type errNoExample string

func (e errNoExample) Error() string { return "no " + string(e) }

// TestSummaryLeavesOutHowTheRunWasScheduled: the docs' examples compare
// verdicts, so the lines on how a run was scheduled (present when the
// target answered slowly, as a loopback target does on a loaded machine)
// are left out, and every other line of the summary kept.
func TestSummaryLeavesOutHowTheRunWasScheduled(t *testing.T) {
	out := "gwconform: checking against http://127.0.0.1:5555, seed 1\n" +
		"  MUST   1776 checks: 1774 passed, 2 failed\n" +
		"  critical path: Appliance Module 01, 2273 round trips one after another (0.7 s); up to 32 requests in flight at once\n" +
		"  run ahead: 1255 checks in 7 chains side by side, 0.4 s; the others in their place\n" +
		"  observer: http://127.0.0.1:5556\n"
	got := summaryOf(out, map[string]string{"http://127.0.0.1:5556": "http://127.0.0.1:9090"})
	want := "  MUST   1776 checks: 1774 passed, 2 failed\n  observer: http://127.0.0.1:9090\n"
	if got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}
