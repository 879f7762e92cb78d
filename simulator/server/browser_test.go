package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	// simtest imports this package: its internal tests use the part
	// of simtest that does not (package core), under the same name.
	simtest "github.com/gwdmi/gwtools/simulator/internal/simtestcore"
)

// The browser tests drive Debian's Chromium: one browser for the package,
// a new tab per test. They wait for elements and text, never sleep, and
// save a screenshot of each test under reports/browser/.

var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
	browserStop func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if browserStop != nil {
		browserStop()
	}
	os.Exit(code)
}

// browser starts Chromium once for the package (simtest.StartChromium).
func browser(t *testing.T) context.Context {
	t.Helper()
	// Missing: one line and a skip, or a failure under CI=true.
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	browserOnce.Do(func() { browserCtx, browserStop, browserErr = simtest.StartChromium(1400, 1000) })
	if browserErr != nil {
		t.Fatal(browserErr)
	}
	return browserCtx
}

// tab opens a new tab for one test; it saves a screenshot when the test
// ends (named -failed when it failed) and closes the tab.
func tab(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t))
	ctx, cancelTime := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() {
		name := t.Name()
		if t.Failed() {
			name += "-failed"
		}
		screenshot(t, ctx, name)
		cancelTime()
		cancel()
	})
	return ctx
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	dir := filepath.Join("..", "..", "reports", "browser")
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

// within runs actions that must finish within d (a wait for the page to
// show something).
func within(ctx context.Context, d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return chromedp.Do(c, actions...)
}

// text is the text of the element sel.
func text(ctx context.Context, sel string) string {
	s, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	return s
}

// until waits for a JavaScript expression to be true. A page that is
// replaced while the expression is polled (a navigation still finishing,
// a form's answer arriving) takes the poll's execution context with it;
// the poll starts again in the new page until ctx ends.
func until(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for {
			_, err := chromedp.Poll[bool](expr)(ctx, t)
			if err == nil || !contextReplaced(err) || ctx.Err() != nil {
				return chromedp.Void{}, err
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, err
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// contextReplaced: the error of an evaluation whose page went away under it.
func contextReplaced(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Cannot find context with specified id") ||
		strings.Contains(s, "Execution context was destroyed") ||
		strings.Contains(s, "Inspected target navigated or closed")
}

var dimmerSN = simtest.SN('a', 5)

func bulb(sn, dimming string) string {
	return fmt.Sprintf(`.device[data-sn="%s"] .bulb[data-dimming="%s"]`, sn, dimming)
}

// TestBrowserLiveDevice: a signed command sent over HTTP, in JSON then in
// XML, redraws the bulb within a second without reloading; a rejected one
// shows in the journal with its error code and field.
func TestBrowserLiveDevice(t *testing.T) {
	_, c := testServer(t, nil, Config{}, nil)
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.Base+"/_sim/"),
		chromedp.WaitVisible(chromedp.CSS(`.device[data-sn="`+dimmerSN+`"] .bulb`)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`))); err != nil {
		t.Fatalf("dashboard did not draw the dimmer or go live: %v", err)
	}
	// A marker that a reload would lose.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format  device.Format
		dimming string
	}{{device.JSON, "40"}, {device.XML, "73"}} {
		c.Send(device.SendCommand, tc.format, dimmer(c, c.Envelope(), tc.dimming)).OK(t, tc.format)
		if err := within(ctx, time.Second, chromedp.WaitVisible(chromedp.CSS(bulb(dimmerSN, tc.dimming)))); err != nil {
			t.Errorf("%s: the bulb did not show dimming %s within a second: %v", tc.format, tc.dimming, err)
		}
	}
	c.Send(device.SendCommand, device.XML, dimmer(c, c.Envelope(), "0")).Fail(t, device.XML, 400, device.CodeInvalidField, "dimming")
	if err := within(ctx, time.Second,
		chromedp.WaitVisible(chromedp.CSS(`#journal tr.rejected[data-code="invalid_field"]`))); err != nil {
		t.Fatalf("the rejected request is not highlighted in the journal: %v", err)
	}
	row := text(ctx, `#journal tr.rejected[data-code="invalid_field"]`)
	if !strings.Contains(row, "invalid_field (dimming)") || !strings.Contains(row, "400") {
		t.Errorf("journal row %q lacks the status, code and field", row)
	}
	same, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`))
	if !same {
		t.Error("the page reloaded")
	}
	// The bulb still shows the last accepted value.
	if err := within(ctx, time.Second, chromedp.WaitVisible(chromedp.CSS(bulb(dimmerSN, "73")))); err != nil {
		t.Errorf("a rejected command changed the drawing: %v", err)
	}
}

// TestBrowserSignIn: behind --admin-token the page asks for the token; a
// wrong one is refused, the right one sets an HttpOnly SameSite=Strict
// cookie that is not the token, and the page works; the token is in no
// log line and no page; sign-out ends the session.
func TestBrowserSignIn(t *testing.T) {
	const token = "br0wser-t0ken-xyz"
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, c := testServer(t, nil, Config{AdminToken: token, Logger: logger}, nil)
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.Base+"/_sim/"),
		chromedp.WaitVisible(chromedp.CSS(`#signin-form`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), "not-the-token"),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#signin-error`)),
		until(`document.getElementById("signin-error").textContent !== ""`)); err != nil {
		t.Fatal(err)
	}
	msg := text(ctx, `#signin-error`)
	if msg != "Wrong token." {
		t.Errorf("wrong token: the page says %q", msg)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token`), token),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.device[data-sn="`+dimmerSN+`"] .bulb`)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)),
		chromedp.WaitVisible(chromedp.CSS(`#signout`))); err != nil {
		t.Fatalf("the right token did not open the dashboard: %v", err)
	}
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{c.Base + "/_sim/"}})
	if err != nil {
		t.Fatal(err)
	}
	cookies := res.Cookies
	var session *network.Cookie
	for _, ck := range cookies {
		if ck.Name == SessionCookie {
			session = ck
		}
	}
	if session == nil {
		t.Fatalf("no %s cookie among %d", SessionCookie, len(cookies))
	}
	if !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Path != "/_sim/" || session.Secure {
		t.Errorf("cookie: HttpOnly %v SameSite %s Path %s Secure %v", session.HTTPOnly, session.SameSite, session.Path, session.Secure)
	}
	if strings.Contains(session.Value, token) {
		t.Error("the cookie holds the token")
	}
	// The page is live behind the cookie.
	c.Send(device.SendCommand, device.JSON, dimmer(c, c.Envelope(), "12")).OK(t, device.JSON)
	if err := within(ctx, time.Second, chromedp.WaitVisible(chromedp.CSS(bulb(dimmerSN, "12")))); err != nil {
		t.Errorf("signed in, the bulb did not follow: %v", err)
	}

	// The cookie opens the admin API; a change made with it needs this origin.
	cookie := SessionCookie + "=" + session.Value
	do := func(method, path, origin string) int {
		req, _ := http.NewRequest(method, c.Base+path, strings.NewReader(`{"latency":"1ms"}`))
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := do("GET", "/_sim/faults", ""); got != 200 {
		t.Errorf("GET with the cookie: %d", got)
	}
	if got := do("PUT", "/_sim/faults", ""); got != 401 {
		t.Errorf("PUT with the cookie and no Origin: %d, want 401", got)
	}
	if got := do("PUT", "/_sim/faults", "http://evil.example"); got != 403 {
		t.Errorf("PUT with the cookie from another origin: %d, want 403 (guard.go)", got)
	}
	if got := do("PUT", "/_sim/faults", c.Base); got != 200 {
		t.Errorf("PUT with the cookie from the dashboard's origin: %d, want 200", got)
	}

	html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(html, token) {
		t.Error("the page shows the token")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#signout`)),
		chromedp.WaitVisible(chromedp.CSS(`#signin-form`))); err != nil {
		t.Errorf("sign-out: %v", err)
	}
	if got := do("GET", "/_sim/faults", ""); got != 401 {
		t.Errorf("the cookie still works after sign-out: %d", got)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), token) {
		t.Error("the token is in the log")
	}
	if !strings.Contains(logs.String(), "dashboard sign-in refused") {
		t.Errorf("the refused sign-in is not logged:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestBrowserFaults: faults set from the page are in force: an error rate
// on update_name only, and a device made unreachable with its button.
func TestBrowserFaults(t *testing.T) {
	_, c := testServer(t, nil, Config{}, nil)
	ctx := tab(t)
	rename := func(name string) []simtest.F {
		return append(c.Envelope(), simtest.S("sn", dimmerSN), simtest.S("name", name))
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(c.Base+"/_sim/"),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)),
		chromedp.SendKeys(chromedp.CSS(`#f-op-update_name`), "1"),
		chromedp.Click(chromedp.CSS(`#faults-set`)),
		chromedp.WaitVisible(chromedp.CSS(`#faults-now[data-faults="some"]`))); err != nil {
		t.Fatalf("setting a fault from the page: %v", err)
	}
	var f Faults
	c.AdminJSON("GET", "/_sim/faults", "", &f)
	if f.OperationErrorRates["update_name"] != 1 || len(f.OperationErrorRates) != 1 {
		t.Errorf("faults after the page set them: %+v", f)
	}
	for _, format := range []device.Format{device.JSON, device.XML} {
		c.Send(device.UpdateName, format, rename("Nope")).Fail(t, format, 503, device.CodeInjectedFault, "")
		c.Send(device.SendCommand, format, dimmer(c, c.Envelope(), "55")).OK(t, format)
	}
	// A bad value is refused with the field named, and changes nothing.
	// Focused as a person typing would be: the page refills the form from
	// the faults in force on every change unless the user is in it, and the
	// requests just sent are still arriving as events.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#f-latency`)), chromedp.SetValue(chromedp.CSS(`#f-latency`), "soon"),
		chromedp.Click(chromedp.CSS(`#faults-set`)),
		until(`document.getElementById("faults-error").textContent !== ""`)); err != nil {
		t.Fatal(err)
	}
	msg := text(ctx, `#faults-error`)
	if !strings.Contains(msg, "latency") {
		t.Errorf("bad latency: the page says %q", msg)
	}
	var after Faults
	c.AdminJSON("GET", "/_sim/faults", "", &after)
	if after.OperationErrorRates["update_name"] != 1 || after.Latency.Duration != 0 {
		t.Errorf("a refused change changed the faults: %+v", after)
	}
	// Clear, then make the dimmer unreachable with its own button.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#faults-clear`)),
		chromedp.WaitVisible(chromedp.CSS(`#faults-now[data-faults="none"]`)),
		// The cards are redrawn on every event, so the button is found
		// and clicked in one step inside the page.
		until(`(() => { const b = document.querySelector('.device[data-sn="`+dimmerSN+`"] .toggle-unreachable');
			if (!b) return false; b.click(); return true; })()`),
		chromedp.WaitVisible(chromedp.CSS(`.device.unreachable[data-sn="`+dimmerSN+`"]`))); err != nil {
		t.Fatalf("making the dimmer unreachable from the page: %v", err)
	}
	for _, format := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, format, dimmer(c, c.Envelope(), "66")).Fail(t, format, 504, device.CodeDeviceUnreachable, "sn")
	}
	if err := within(ctx, time.Second, chromedp.WaitVisible(chromedp.CSS(bulb(dimmerSN, "55")))); err != nil {
		t.Errorf("a refused command changed the drawing: %v", err)
	}
}

// TestBrowserMessages: a message sent in JSON and in XML shows on its
// gateway as "type: value" (the data's message_type and message_value),
// newest first, never as "undefined".
func TestBrowserMessages(t *testing.T) {
	_, c := testServer(t, nil, Config{}, nil)
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.Base+"/_sim/"), chromedp.WaitVisible(chromedp.CSS(`#live.on`))); err != nil {
		t.Fatalf("dashboard did not go live: %v", err)
	}
	msg := func(typ, value string) []simtest.F {
		return append(c.Envelope(), simtest.S(device.FieldMessageType, typ), simtest.S(device.FieldMessageValue, value))
	}
	c.Send(device.SendMessage, device.JSON, msg("brightness", "brightness=80")).OK(t, device.JSON)
	c.Send(device.SendMessage, device.XML, msg("alarm", "level=3")).OK(t, device.XML)
	if err := within(ctx, 2*time.Second, until(`document.querySelectorAll(".gateway .messages li.message").length === 2`)); err != nil {
		t.Fatalf("the two messages are not listed: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll(".gateway .messages li.message")].map((li) => li.textContent.substring(13))`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"alarm: level=3", "brightness: brightness=80"} // newest first
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("messages drawn as %q, want %q", got, want)
	}
	if page := text(ctx, `#devices`); strings.Contains(page, "undefined") {
		t.Errorf("the page shows undefined: %q", page)
	}
}

// TestBrowserJournalRejected: rejected requests whose body named a gateway
// and a device keep them, in the journal API and on the page, in JSON and
// XML; a body that could not be parsed names none. In a 1,280 px window
// the journal, with long codes, fields and serial numbers, fits: nothing
// runs past the window or its column.
func TestBrowserJournalRejected(t *testing.T) {
	_, c := testServer(t, nil, Config{}, nil)
	ctx := tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(c.Base+"/_sim/"), chromedp.WaitVisible(chromedp.CSS(`#live.on`))); err != nil {
		t.Fatalf("dashboard did not go live: %v", err)
	}
	mac := c.Envelope()
	var gw string
	for _, f := range mac {
		if f.Key == device.FieldMAC {
			gw = f.Val
		}
	}
	// invalid_field in both formats, an unknown type (invalid_field type),
	// a missing field: each body names the gateway and the dimmer.
	c.Send(device.SendCommand, device.JSON, dimmer(c, c.Envelope(), "0")).Fail(t, device.JSON, 400, device.CodeInvalidField, "dimming")
	c.Send(device.SendCommand, device.XML, dimmer(c, c.Envelope(), "101")).Fail(t, device.XML, 400, device.CodeInvalidField, "dimming")
	c.Send(device.UpdateName, device.JSON, append(c.Envelope(), simtest.S("sn", dimmerSN))).Fail(t, device.JSON, 400, device.CodeMissingField, "name")
	// Not parsed: no gateway or device to name.
	c.Post(device.SendCommand.Path(), "application/json", []byte(`{"control": {"mac": "`+gw+`", "sn": `)).Fail(t, device.JSON, 400, device.CodeMalformedBody, "")

	var journal []Entry
	c.AdminJSON("GET", "/_sim/journal?limit=4", "", &journal)
	if len(journal) != 4 {
		t.Fatalf("journal: %d entries", len(journal))
	}
	for i, e := range journal[:3] {
		if e.MAC != gw || e.SN != dimmerSN || e.Status != 400 {
			t.Errorf("journal entry %d (%s %s): mac %q sn %q, want %s %s", i, e.Format, e.Code, e.MAC, e.SN, gw, dimmerSN)
		}
	}
	if e := journal[3]; e.Code != device.CodeMalformedBody || e.MAC != "" || e.SN != "" {
		t.Errorf("the malformed body's entry: %+v", e)
	}

	if err := within(ctx, 2*time.Second, until(`document.querySelectorAll("#journal tr.rejected").length === 4`)); err != nil {
		t.Fatalf("the four rejected requests are not in the journal: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]string](`[...document.querySelectorAll("#journal tr.rejected")].map((tr) => ({
		code: tr.dataset.code, mac: tr.querySelector(".device-ref").dataset.mac, sn: tr.querySelector(".device-ref").dataset.sn,
		text: tr.querySelector(".device-ref").textContent}))`))
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: the malformed body, then the three that named the dimmer.
	if rows[0]["code"] != device.CodeMalformedBody || rows[0]["text"] != "" {
		t.Errorf("the malformed body's row: %v", rows[0])
	}
	for _, r := range rows[1:] {
		if r["mac"] != gw || r["sn"] != dimmerSN || !strings.Contains(r["text"], "Light Dimmer a") {
			t.Errorf("a rejected row lost its gateway or device: %v", r)
		}
	}

	// Fits: nothing wider than the window, the journal within its column,
	// no cell's content past its cell.
	fit, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`(() => {
		const t = document.getElementById("journal"), col = t.parentElement;
		let over = 0;
		for (const td of t.querySelectorAll("td")) over = Math.max(over, td.scrollWidth - td.clientWidth);
		return {window: window.innerWidth, page: document.documentElement.scrollWidth,
			right: t.getBoundingClientRect().right, table: t.scrollWidth, column: col.clientWidth, cell: over};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if fit["window"] != 1280 {
		t.Fatalf("the window is %v px wide, want 1280", fit["window"])
	}
	if fit["page"] > fit["window"] || fit["right"] > fit["window"] || fit["table"] > fit["column"] || fit["cell"] > 0 {
		t.Errorf("the journal does not fit a 1,280 px window: %v", fit)
	}
}
