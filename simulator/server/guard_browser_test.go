package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserCrossSiteFormChangesNothing: a page on another origin (another
// loopback port, reached as 127.0.0.1 — same site — and as localhost —
// cross-site) submits a text/plain form to /_sim/reset, as any web page a
// developer opens could, and fires a no-cors fetch at it too; gwsim runs
// without an admin token, the default. Chromium delivers both (the form's
// answer is gwsim's 403 cross_site_request on the screen), and the state
// is unchanged. The dashboard itself, on gwsim's origin, still resets.
func TestBrowserCrossSiteFormChangesNothing(t *testing.T) {
	_, c := testServer(t, nil, Config{}, nil)
	// After the server: the tab (and the dashboard's event stream) is
	// closed before the server waits for its requests to end.
	ctx := tab(t)
	dimTo(t, c, "43")
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>cute cats</title>
<form id="f" method="POST" action="%[1]s/_sim/reset" enctype="text/plain"><input name='{"x":"' value='"}'></form>
<script>
fetch(%[1]q + "/_sim/reset", {method: "POST", mode: "no-cors", body: "{}", headers: {"Content-Type": "text/plain"}})
  .finally(() => document.getElementById("f").submit());
</script>`, c.Base)
	}))
	t.Cleanup(evil.Close)
	port := evil.URL[strings.LastIndex(evil.URL, ":"):]
	for _, page := range []string{"http://127.0.0.1" + port, "http://localhost" + port} {
		if err := chromedp.Do(ctx, chromedp.Navigate(page+"/")); err != nil {
			t.Fatal(err)
		}
		// The form was sent: the tab now shows gwsim's refusal.
		if err := within(ctx, 10*time.Second, until(`location.pathname === "/_sim/reset" && document.body.innerText.includes("cross_site_request")`)); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("from %s: the form's answer is not gwsim's refusal: %v (%q)", page, err, body)
		}
		if d := dimming(c); d != 43.0 {
			t.Fatalf("from %s: the cross-site form reset the state (dimming %v)", page, d)
		}
	}
	// The dashboard's own origin still may.
	if err := chromedp.Do(ctx, chromedp.Navigate(c.Base+"/_sim/")); err != nil {
		t.Fatal(err)
	}
	if err := within(ctx, 10*time.Second, until(`fetch("/_sim/reset", {method: "POST"}).then(r => r.status === 200)`)); err != nil {
		t.Fatalf("the dashboard's origin could not reset: %v", err)
	}
	if d := dimming(c); d == 43.0 {
		t.Error("the same-origin reset did not reset")
	}
}
