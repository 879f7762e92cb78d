package server

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// For the browser tests of package server_test, which start whole
// simulators on Redis (package server cannot import them itself).

// Tab is a new tab of the package's browser (tab).
func Tab(t *testing.T) context.Context { return tab(t) }

// Within runs actions that must finish within d (within).
func Within(ctx context.Context, d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	return within(ctx, d, actions...)
}

// Text is the text of the element sel (text).
func Text(ctx context.Context, sel string) string { return text(ctx, sel) }

// Screenshot saves the page under reports/browser/NAME.png (screenshot).
func Screenshot(t *testing.T, ctx context.Context, name string) { screenshot(t, ctx, name) }

// Until waits for a JavaScript expression to be true (until).
func Until(expr string) chromedp.Action[chromedp.Void] { return until(expr) }
