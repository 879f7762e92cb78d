package simtestcore

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is where the browser tests find Chromium (Debian's
// package: apt-get install -y chromium).
const ChromiumPath = "/usr/bin/chromium"

// Chromium is a chromedp context on a Chromium started for this test:
// headless, without sandbox, with a fresh profile and a window of width x
// height. It is stopped when the test ends. Where Chromium is not
// installed the test is skipped with one line, or fails under CI=true
// (NeedTool).
func Chromium(t testing.TB, width, height int) context.Context {
	t.Helper()
	NeedTool(t, ChromiumPath, "apt-get install -y chromium")
	ctx, stop, err := StartChromium(width, height)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return ctx
}

// StartChromium starts a Chromium as Chromium does, for a browser shared
// by several tests (one per package, a tab each); stop ends it and
// removes its profile. Call NeedTool first.
func StartChromium(width, height int) (ctx context.Context, stop func(), err error) {
	dir, err := os.MkdirTemp("", "gwtools-chromium-")
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.UserDataDir(dir),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		// Background networking hangs on a closed network.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	stop = func() { cancelBrowser(); cancelAlloc(); os.RemoveAll(dir) }
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		stop()
		return nil, nil, fmt.Errorf("chromium did not start: %v", err)
	}
	return bctx, stop, nil
}

// ConsoleErrors collects what the tab of ctx logs as an error or throws;
// the returned func stops collecting (after a moment for the last events
// on their way) and gives them. A tab not opened yet is opened first, on
// ctx itself (opened on the context derived here, it would not be the
// tab the test then drives).
func ConsoleErrors(ctx context.Context) func() []string {
	if err := chromedp.Do(ctx); err != nil {
		return func() []string { return []string{"the tab did not open: " + err.Error()} }
	}
	ctx, cancel := context.WithCancel(ctx)
	messages := chromedp.Console(ctx)
	var (
		mu   sync.Mutex
		errs []string
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, m.String())
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		time.Sleep(300 * time.Millisecond)
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return errs
	}
}
