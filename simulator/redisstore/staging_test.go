package redisstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// What a shared staging service needs of its replicas beyond the state:
// one dashboard session for all, one event feed for all, and health that
// says what is wrong.

const stagingToken = "staging-admin-token-1-9f3a7c2e5b8d4016"

// signIn signs in to the dashboard of base and returns the session cookie.
func signIn(t *testing.T, base string) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/_sim/session", strings.NewReader(`{"token":"`+stagingToken+`"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == server.SessionCookie && c.Value != "" {
			return c
		}
	}
	t.Fatalf("sign-in on %s: %d, no cookie", base, res.StatusCode)
	return nil
}

// withCookie calls the admin API with the cookie (and the Origin of base
// for changes) and returns the status.
func withCookie(t *testing.T, method, base, path string, c *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, nil)
	req.AddCookie(c)
	if method != http.MethodGet {
		req.Header.Set("Origin", base)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A session made on one replica is honoured by the others; signing out on
// one ends it on all.
func TestDashboardSessionOnAnyReplica(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 3, "--admin-token", stagingToken)
	c := signIn(t, ps[0].URL)
	for k, p := range ps {
		if got := withCookie(t, http.MethodGet, p.URL, "/_sim/state", c); got != http.StatusOK {
			t.Errorf("replica %d with replica 1's session: %d, want 200", k+1, got)
		}
	}
	if got := withCookie(t, http.MethodDelete, ps[2].URL, "/_sim/session", c); got != http.StatusOK {
		t.Fatalf("sign-out on replica 3: %d", got)
	}
	for k, p := range ps {
		if got := withCookie(t, http.MethodGet, p.URL, "/_sim/state", c); got != http.StatusUnauthorized {
			t.Errorf("replica %d after sign-out on replica 3: %d, want 401", k+1, got)
		}
	}
	// A cookie not made with the token is refused everywhere, as before.
	forged := &http.Cookie{Name: server.SessionCookie, Value: strings.Repeat("0", 32) + "." + strings.Repeat("0", 64)}
	if got := withCookie(t, http.MethodGet, ps[1].URL, "/_sim/state", forged); got != http.StatusUnauthorized {
		t.Errorf("forged cookie: %d", got)
	}
}

// events reads GET /_sim/events of base and sends each change on the
// channel until ctx ends.
func events(t *testing.T, ctx context.Context, base string) <-chan server.Change {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_sim/events", nil)
	req.Header.Set("Authorization", "Bearer "+stagingToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", res.StatusCode)
	}
	out := make(chan server.Change, 100)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var c server.Change
			if json.Unmarshal([]byte(data), &c) == nil {
				select {
				case out <- c:
				default:
				}
			}
		}
	}()
	return out
}

// The feed of one replica carries the events of every replica, each
// naming its replica (--replica-name), for requests in both formats and
// for admin changes.
func TestEventsOfEveryReplica(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, false)
	bin, fl := gwsim(t), fleetFile(t)
	one := simtest.Serve(t, bin, "--store", r.URL(), "--fleet", fl, "--admin-token", stagingToken, "--replica-name", "one")
	two := simtest.Serve(t, bin, "--store", r.URL(), "--fleet", fl, "--admin-token", stagingToken, "--replica-name", "two")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	feed := events(t, ctx, one.URL)

	c := simtest.NewClient(t, two.URL)
	c.AdminToken = stagingToken
	for _, f := range []device.Format{device.JSON, device.XML} {
		sn := simtest.SN('a', 0)
		name := "Seen on one " + f.String()
		// Sent again until seen: replica two learns that replica one
		// has a subscriber from a message on the channel, a moment after
		// the subscription (the feed is best effort).
		send := func() {
			c.Send(device.UpdateName, f, append(c.Envelope(), simtest.S("sn", sn), simtest.S("name", name))).OK(t, f)
		}
		send()
		waitChange(t, ctx, feed, send, func(ch server.Change) bool {
			return ch.Kind == "request" && ch.Replica == "two" && ch.Entry != nil && ch.Entry.SN == sn && ch.Entry.Format == f.String() && ch.Entry.Status == 200
		}, "replica two's "+f.String()+" rename on replica one's feed")
	}
	c.AdminJSON(http.MethodDelete, "/_sim/faults", "", nil)
	waitChange(t, ctx, feed, nil, func(ch server.Change) bool { return ch.Kind == "faults" && ch.Replica == "two" }, "replica two's faults change")

	// Replica one's own events name it too, and the dashboard data says
	// which replica serves the page.
	own := simtest.NewClient(t, one.URL)
	own.Send(device.SendMessage, device.JSON, append(own.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "x=1"))).OK(t, device.JSON)
	waitChange(t, ctx, feed, nil, func(ch server.Change) bool { return ch.Kind == "request" && ch.Replica == "one" }, "replica one's own message")
	own.AdminToken = stagingToken
	var d server.DashboardData
	own.AdminJSON(http.MethodGet, "/_sim/dashboard/data", "", &d)
	if d.Replica != "one" {
		t.Errorf("dashboard data of replica one names %q", d.Replica)
	}
}

// waitChange reads the feed until a change is what is wanted; resend,
// when set, is called every half second meanwhile.
func waitChange(t *testing.T, ctx context.Context, feed <-chan server.Change, resend func(), want func(server.Change) bool, what string) {
	t.Helper()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case c := <-feed:
			if want(c) {
				return
			}
		case <-tick.C:
			if resend != nil {
				resend()
			}
		case <-ctx.Done():
			t.Fatalf("no event: %s", what)
		}
	}
}

// Redis lost, then back without the fleet (no persistence), then the
// fleet loaded again by POST /_sim/reset: each change of health is logged
// once, /_sim/health says why it is 503, and every admin read answers 503
// rather than state Redis does not hold.
func TestRedisBackWithoutFleet(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 1, "--log-level", "info", "--log-summary", "0")
	p := ps[0]
	c := simtest.NewClient(t, p.URL)
	i, ty := thermostat(t)
	sn := simtest.SN('a', i)
	health := func() (int, map[string]string) {
		status, _, body := c.Admin(http.MethodGet, "/_sim/health", "")
		var h map[string]string
		json.Unmarshal(body, &h)
		return status, h
	}
	waitLog := func(what string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(p.Stderr(), what) < n {
			if time.Now().After(deadline) {
				t.Fatalf("no log line %q after 10 s:\n%s", what, p.Stderr())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if status, h := health(); status != http.StatusOK || h["store"] != "redis" {
		t.Fatalf("health: %d %v", status, h)
	}

	r.Kill()
	waitLog("storage unavailable", 1)
	if status, h := health(); status != http.StatusServiceUnavailable || h["status"] != "degraded" || !strings.Contains(h["reason"], "cannot be reached") {
		t.Errorf("health with Redis down: %d %v", status, h)
	}

	r.Start() // empty: no persistence
	waitLog("storage still unavailable, for another reason", 1)
	status, h := health()
	if status != http.StatusServiceUnavailable || !strings.Contains(h["reason"], "no longer holds the fleet") || !strings.Contains(h["reason"], "POST /_sim/reset") {
		t.Errorf("health with Redis back empty: %d %v", status, h)
	}
	for _, path := range []string{"/_sim/state", "/_sim/gateways/" + simtest.MACA + "/devices/" + sn, "/_sim/gateways/" + simtest.MACA + "/messages",
		"/_sim/journal", "/_sim/faults", "/_sim/dashboard/data"} {
		status, hdr, body := c.Admin(http.MethodGet, path, "")
		if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(string(body), device.CodeStorageUnavailable) {
			t.Errorf("GET %s with Redis back empty: %d %s", path, status, body)
		}
	}
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, f, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", f), "18"))).
			Fail(t, f, http.StatusServiceUnavailable, device.CodeStorageUnavailable, "")
		c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "lost=1"))).
			Fail(t, f, http.StatusServiceUnavailable, device.CodeStorageUnavailable, "")
	}

	// The recovery step the reason names.
	c.Reset()
	waitLog("storage available again", 1)
	if status, h := health(); status != http.StatusOK {
		t.Errorf("health after POST /_sim/reset: %d %v", status, h)
	}
	c.Send(device.SendCommand, device.XML, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.XML), "19"))).OK(t, device.XML)
	if d := c.Device(simtest.MACA, sn); fmt.Sprint(d.State["heating_point"]) != "19" {
		t.Errorf("after the reset: %v", d.State)
	}
	logs := p.Stderr()
	for what, n := range map[string]int{"storage unavailable": 1, "storage still unavailable": 1, "storage available again": 1} {
		if got := strings.Count(logs, what); got != n {
			t.Errorf("%q logged %d times, want %d:\n%s", what, got, n, logs)
		}
	}
	if !strings.Contains(logs, "level=WARN msg=\"storage unavailable") || !strings.Contains(logs, "level=INFO msg=\"storage available again\"") ||
		!strings.Contains(logs, "unavailable_for=") {
		t.Errorf("want the loss at warn and the return at info with how long it lasted:\n%s", logs)
	}
}
