package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/clients"
	// simtest imports this package: its internal tests use the part
	// of simtest that does not (package core), under the same name.
	simtest "github.com/gwdmi/gwtools/simulator/internal/simtestcore"
	"github.com/gwdmi/gwtools/simulator/store"
)

// testServer serves the test fleet f (simtest.Fleet when nil) over real
// HTTP; edit may change the server before it serves.
func testServer(t *testing.T, f *fleet.Fleet, cfg Config, edit func(*Server)) (*Server, *simtest.Client) {
	t.Helper()
	if f == nil {
		f = simtest.Fleet()
	}
	cfg.Store = store.New(f, 0)
	cfg.Auth = f.Authenticator()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := New(cfg)
	if edit != nil {
		edit(s)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	c := simtest.NewClient(t, hs.URL)
	c.AdminToken = cfg.AdminToken
	return s, c
}

func dimmer(_ *simtest.Client, env []simtest.F, value string) []simtest.F {
	return append(env, simtest.S("sn", simtest.SN('a', 5)), simtest.S("type", "Light Dimmer"), simtest.S("dimming", value))
}

// TestRejectReplays: with replay protection a request whose operation
// and fields (in either format), timestamp and sign are those of a
// request accepted earlier is refused (CONTRACT 1): the same request
// again, its sign in the other letter case, the same command in the other
// format. Two different requests of one second are accepted, whatever
// their sign; a request that failed authentication or that a fault
// refused is not remembered; without protection a repeat is accepted.
func TestRejectReplays(t *testing.T) {
	_, c := testServer(t, nil, Config{RejectReplays: true, AdminToken: "tok"}, nil)
	now := time.Now()
	for i, format := range []device.Format{device.JSON, device.XML} {
		other := device.Format(3 - format)
		env := c.EnvelopeAt(now.Add(time.Duration(-10*i) * time.Second))
		fields := dimmer(c, env, "33")
		c.Send(device.SendCommand, format, fields).OK(t, format)
		c.Send(device.SendCommand, format, fields).Fail(t, format, http.StatusUnauthorized, device.CodeReplayedRequest, "")
		// The same sign in upper case is the same request.
		upper := simtest.Set(fields, simtest.S(device.FieldSign, strings.ToUpper(env[2].Val)))
		c.Send(device.SendCommand, format, upper).Fail(t, format, http.StatusUnauthorized, device.CodeReplayedRequest, "")
		// The same command in the other format is the same request.
		c.Send(device.SendCommand, other, fields).Fail(t, other, http.StatusUnauthorized, device.CodeReplayedRequest, "")
		// Another command and another operation in the same second are not.
		c.Send(device.SendCommand, format, dimmer(c, env, "34")).OK(t, format)
		rename := append(append([]simtest.F{}, env...), simtest.S("sn", simtest.SN('a', 5)), simtest.S("name", "Hall "+format.String()))
		c.Send(device.UpdateName, format, rename).OK(t, format)
		c.Send(device.UpdateName, format, rename).Fail(t, format, http.StatusUnauthorized, device.CodeReplayedRequest, "")
	}
	if d := c.Device(simtest.MACA, simtest.SN('a', 5)); d.State["dimming"] != 34.0 || d.Name != "Hall xml" {
		t.Errorf("device %+v, want dimming 34 and the second name", d)
	}
	// A bad sign is refused as such every time, and does not use up the
	// timestamp: the good request afterwards passes.
	env := c.EnvelopeAt(now.Add(-30 * time.Second))
	bad := simtest.Set(dimmer(c, env, "35"), simtest.S(device.FieldSign, strings.Repeat("0", 32)))
	for range 2 {
		c.Send(device.SendCommand, device.JSON, bad).Fail(t, device.JSON, http.StatusUnauthorized, device.CodeBadSignature, device.FieldSign)
	}
	c.Send(device.SendCommand, device.JSON, dimmer(c, env, "35")).OK(t, device.JSON)
	// A request a fault refused was not accepted: sent again once the
	// fault is over, it is no replay.
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1}`, nil)
	faulted := dimmer(c, c.EnvelopeAt(now.Add(-40*time.Second)), "36")
	c.Send(device.SendCommand, device.JSON, faulted).Fail(t, device.JSON, http.StatusServiceUnavailable, device.CodeInjectedFault, "")
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{}`, nil)
	c.Send(device.SendCommand, device.JSON, faulted).OK(t, device.JSON)
	// A request the store refused (no such device) was not accepted
	// either: the same fields again, in either format, are refused for
	// what they are, not as a replay.
	unknown := simtest.Set(dimmer(c, c.EnvelopeAt(now.Add(-50*time.Second)), "37"), simtest.S("sn", simtest.SN('f', 9)))
	for _, f := range []device.Format{device.JSON, device.XML, device.JSON} {
		if a := c.Send(device.SendCommand, f, unknown); a.Code == device.CodeReplayedRequest {
			t.Errorf("a request to a device the gateway does not have, sent again in %s, is refused as a replay", f)
		}
	}

	_, plain := testServer(t, nil, Config{}, nil)
	fields := dimmer(plain, plain.Envelope(), "36")
	plain.Send(device.SendCommand, device.JSON, fields).OK(t, device.JSON)
	plain.Send(device.SendCommand, device.JSON, fields).OK(t, device.JSON)
}

func envelope(key, ts, sign string) *device.Envelope {
	t, _ := time.Parse(device.TimestampLayout, ts)
	return &device.Envelope{APIKey: key, Timestamp: ts, Time: t, Sign: sign}
}

// TestReplayCacheExpiresAndIsBounded: an entry lives until its timestamp
// leaves the window; beyond the cap the one nearest expiry goes first,
// with one warning.
func TestReplayCacheExpiresAndIsBounded(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	ts := auth.Timestamp(t0, time.UTC)
	c := newReplayCache(&auth.Authenticator{Window: time.Minute}, 1000, nil)
	e := envelope("k", ts, strings.Repeat("a", 32))
	if c.seen(e, t0) || !c.seen(e, t0.Add(59*time.Second)) || !c.seen(e, t0.Add(-30*time.Second)) {
		t.Error("not remembered inside the window")
	}
	if c.seen(e, t0.Add(61*time.Second)) {
		t.Error("remembered after the timestamp left the window")
	}
	// Different keys, timestamps and signs are different requests.
	for _, other := range []*device.Envelope{envelope("k2", ts, e.Sign), envelope("k", auth.Timestamp(t0.Add(time.Second), time.UTC), e.Sign),
		envelope("k", ts, strings.Repeat("b", 32))} {
		if c.seen(other, t0) {
			t.Errorf("%+v taken for a replay", other)
		}
	}

	// No window: entries live auth.DefaultWindow from when they were seen.
	c = newReplayCache(&auth.Authenticator{}, 1000, nil)
	e = envelope("k", "20000101000000", e.Sign)
	if c.seen(e, t0) || !c.seen(e, t0.Add(auth.DefaultWindow-time.Second)) || c.seen(e, t0.Add(auth.DefaultWindow+time.Second)) {
		t.Error("without a window")
	}

	warned := 0
	c = newReplayCache(&auth.Authenticator{Window: time.Hour}, 160, func() { warned++ })
	for i := range 5000 {
		sign := make([]byte, 16)
		rand.Read(sign)
		// Later requests carry later timestamps, so the first expire first.
		ts := auth.Timestamp(t0.Add(time.Duration(i)*time.Second/10), time.UTC)
		c.seen(envelope("k", ts, hex.EncodeToString(sign)), t0)
		if n := c.size(); n > 160 {
			t.Fatalf("%d entries, cap 160", n)
		}
	}
	if warned != 1 {
		t.Errorf("warned %d times, want once", warned)
	}
	// Expired entries go as requests come: later, every old one.
	later := t0.Add(2 * time.Hour)
	for range 1000 {
		sign := make([]byte, 16)
		rand.Read(sign)
		c.seen(envelope("k", auth.Timestamp(later, time.UTC), hex.EncodeToString(sign)), later)
	}
	for i := range c.shards {
		for _, at := range c.shards[i].seen {
			if at <= later.UnixNano() {
				t.Fatalf("shard %d keeps an expired entry", i)
			}
		}
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestRateLimit: N requests a second per client, burst N; beyond, 429
// rate_limited in the request's format with Retry-After, and journaled;
// the admin API is not limited.
func TestRateLimit(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	s, c := testServer(t, nil, Config{RateLimit: 5}, func(s *Server) {
		s.rates = memRates{newRateLimiter(5, DefaultRateLimitClients, clock.now)}
	})
	for range 5 {
		c.Send(device.SendCommand, device.JSON, dimmer(c, c.Envelope(), "40")).OK(t, device.JSON)
	}
	for _, format := range []device.Format{device.XML, device.JSON} {
		r := c.Send(device.SendCommand, format, dimmer(c, c.Envelope(), "41"))
		r.Fail(t, format, http.StatusTooManyRequests, device.CodeRateLimited, "")
		if got := r.Header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After %q, want 1", got)
		}
	}
	// Even a request that would fail otherwise counts, and is refused
	// before its body is read.
	c.Post(device.SendCommand.Path(), "text/plain", []byte("x")).Fail(t, device.JSON, http.StatusTooManyRequests, device.CodeRateLimited, "")
	for range 20 {
		c.AdminJSON(http.MethodGet, "/_sim/health", "", nil)
	}
	if d := c.Device(simtest.MACA, simtest.SN('a', 5)); d.State["dimming"] != 40.0 {
		t.Errorf("a limited request changed the device: %v", d.State)
	}
	if last, _, _ := s.Journal().Read(1); len(last) != 1 || last[0].Status != 429 || last[0].Code != device.CodeRateLimited {
		t.Errorf("journal: %+v", last)
	}
	clock.add(250 * time.Millisecond) // one token back
	c.Send(device.SendCommand, device.XML, dimmer(c, c.Envelope(), "42")).OK(t, device.XML)
	c.Send(device.SendCommand, device.XML, dimmer(c, c.Envelope(), "43")).Fail(t, device.XML, http.StatusTooManyRequests, device.CodeRateLimited, "")
}

// TestRateLimiterClients: clients are counted apart (IPv6 by /64), the
// number of buckets is bounded, clients beyond the bound still limited,
// and buckets that filled up again make room.
func TestRateLimiterClients(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	l := newRateLimiter(2, 128, clock.now)
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	for _, ip := range []netip.Addr{a, a, b, b} {
		if ok, _ := l.allow(ip); !ok {
			t.Fatalf("%s refused within its burst", ip)
		}
	}
	if ok, wait := l.allow(a); ok || wait != 500*time.Millisecond {
		t.Errorf("third request of a: %v, wait %s", ok, wait)
	}
	for _, tc := range []struct{ remote, want string }{
		{"10.1.2.3:5555", "10.1.2.3"},
		{"[::ffff:10.1.2.3]:5555", "10.1.2.3"},
		{"[2001:db8:1:2:aaaa::1]:80", "2001:db8:1:2::"},
		{"[2001:db8:1:2:bbbb::9]:80", "2001:db8:1:2::"},
		{"bogus", "invalid IP"},
	} {
		if got := clientOf(&http.Request{RemoteAddr: tc.remote}).String(); got != tc.want {
			t.Errorf("clientOf(%s) = %s, want %s", tc.remote, got, tc.want)
		}
	}

	// A flood of new addresses: at most 128 buckets; those beyond share
	// the shards' overflow buckets, so most of them are refused.
	allowed := 0
	for i := range 5000 {
		ip := netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)})
		if ok, _ := l.allow(ip); ok {
			allowed++
		}
		if i%100 == 0 && l.size() > 128 {
			t.Fatalf("%d buckets, bound 128", l.size())
		}
	}
	if n := l.size(); n > 128 {
		t.Fatalf("%d buckets, bound 128", n)
	}
	if allowed > 128+2*rateShards {
		t.Errorf("%d of 5000 new clients allowed: the overflow is not limited", allowed)
	}
	// Once buckets filled up again they are dropped for new clients.
	clock.add(2 * time.Second)
	if ok, _ := l.allow(netip.MustParseAddr("12.0.0.1")); !ok {
		t.Error("a new client refused after the others went quiet")
	}
}

// TestAdminTokenCompare: only the exact header opens the admin API.
func TestAdminTokenCompare(t *testing.T) {
	_, c := testServer(t, nil, Config{AdminToken: "s3cret-token"}, nil)
	for _, h := range []string{"", "Bearer", "Bearer ", "Bearer s3cret-toke", "Bearer s3cret-tokenX", "bearer s3cret-token",
		"Bearer S3CRET-TOKEN", "Bearer s3cret-tokeN", "Basic s3cret-token", "s3cret-token"} {
		req, _ := http.NewRequest(http.MethodGet, c.Base+"/_sim/state", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d", h, res.StatusCode)
		}
	}
	c.AdminJSON(http.MethodGet, "/_sim/health", "", nil)
}

// TestAdminTokenConstantTime: how long the comparison takes does not
// depend on where a wrong token first differs. With a naive comparison a
// token of 1 MiB wrong in its first byte is refused thousands of times
// faster than one wrong in its last; here both cost the same hashing.
// (Under -race the detector reads whole ranges, which hides the
// difference: the test tells only without it, and passes with it.)
// TestAdminTokenComparison: a token wrong in its first or its last byte is
// refused, the right one accepted. That the comparison takes the same time
// whatever the bytes is by construction (SHA-256 of both sides, then
// crypto/subtle), not measured here: a timing assertion would only make the
// test flaky on a shared machine.
func TestAdminTokenComparison(t *testing.T) {
	token := bytes.Repeat([]byte("t"), 1<<10)
	want := sha256Of("Bearer " + string(token))
	early, late := []byte("Bearer "+string(token)), []byte("Bearer "+string(token))
	early[len("Bearer ")] = 'x'
	late[len(late)-1] = 'x'
	for _, wrong := range []string{string(early), string(late), "Bearer ", "", string(token)} {
		if tokenMatches(wrong, want) {
			t.Errorf("a wrong token matched: %.20q…", wrong)
		}
	}
	if !tokenMatches("Bearer "+string(token), want) {
		t.Error("the right token did not match")
	}
}

// TestNoSecretsInLogs: whatever requests come, good or bad, the log (at
// debug level, text and JSON) and the journal never hold a secret or a
// sign.
func TestNoSecretsInLogs(t *testing.T) {
	f := simtest.Fleet()
	secrets := []string{"Zq8-secret-of-account-a-77f1", "Wx3-secret-of-account-b-90c2"}
	f.Accounts[0].APIKeys[0].Secret = secrets[0]
	f.Accounts[1].APIKeys[0].Secret = secrets[1]
	var logs syncBuf
	opts := &slog.HandlerOptions{Level: slog.LevelDebug}
	logger := slog.New(teeHandler{slog.NewTextHandler(&logs, opts), slog.NewJSONHandler(&logs, opts)})
	_, c := testServer(t, f, Config{Logger: logger, RejectReplays: true, AdminToken: "admin-tok-5150"}, nil)
	c.Secret = secrets[0]
	var signs []string
	send := func(op device.Operation, format device.Format, fields []simtest.F) {
		for _, fl := range fields {
			if fl.Key == device.FieldSign {
				signs = append(signs, fl.Val)
			}
		}
		c.Send(op, format, fields)
	}
	now := time.Now()
	for i := range 40 {
		format := device.Format(1 + i%2)
		env := c.EnvelopeAt(now.Add(time.Duration(-i) * time.Second))
		random := make([]byte, 16)
		rand.Read(random)
		sn := simtest.SN('a', 5)
		send(device.SendCommand, format, dimmer(c, env, "50"))            // good
		send(device.SendCommand, format, dimmer(c, env, "50"))            // replayed
		send(device.SendCommand, format, dimmer(c, env, "500"))           // invalid value
		send(device.UpdateName, format, append(env, simtest.S("sn", sn))) // missing name
		send(device.SendMessage, format, append(simtest.Set(env, simtest.S(device.FieldSign, hex.EncodeToString(random))),
			simtest.S("message_type", "message"), simtest.S("message_value", "a=1"))) // wrong sign
		send(device.SendCommand, format, simtest.Set(dimmer(c, env, "51"), simtest.S(device.FieldSign, strings.ToUpper(hex.EncodeToString(random)))))
		send(device.SendCommand, format, simtest.Set(dimmer(c, env, "52"), simtest.S(device.FieldSign, hex.EncodeToString(random)[:31]+"g")))
		send(device.SendCommand, format, simtest.Set(dimmer(c, env, "53"), simtest.S(device.FieldSign, secrets[0])))
		send(device.SendCommand, format, simtest.Set(dimmer(c, env, "54"), simtest.S(device.FieldAPIKey, simtest.KeyB)))
		stale := c.EnvelopeAt(now.Add(-time.Hour))
		send(device.SendCommand, format, dimmer(c, stale, "55"))
		send(device.SendCommand, format, append(dimmer(c, c.EnvelopeAt(now.Add(time.Duration(-i)*time.Second-time.Minute)), "56"), simtest.S("bogus", "1")))
		// Bodies that do not parse, with a sign in them.
		sign := auth.Sign(c.APIKey, c.Secret, auth.Timestamp(now.Add(time.Duration(i)*time.Hour), time.UTC))
		signs = append(signs, sign)
		c.Post(device.SendCommand.Path(), "application/json", []byte(`{"control":{"sign":"`+sign+`",`))
		c.Post(device.SendCommand.Path(), "application/xml", []byte(`<xml><control><sign>`+sign+`</sign></control>`))
		c.Post(device.SendCommand.Path(), "text/plain", []byte("sign="+sign))
		c.Do(http.MethodGet, device.SendCommand.Path()+"?sign="+sign, "", nil)
	}
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1}`, nil)
	send(device.SendCommand, device.JSON, dimmer(c, c.EnvelopeAt(now.Add(-time.Minute-30*time.Second)), "57"))
	c.Reset()
	var journal []byte
	_, _, journal = c.Admin(http.MethodGet, "/_sim/journal?limit=10000", "")

	out := logs.String()
	if strings.Count(out, "request") < 1000 {
		t.Fatalf("the log is too short to mean anything:\n%s", out)
	}
	for where, text := range map[string]string{"log": out, "journal": string(journal)} {
		lower := strings.ToLower(text)
		for _, s := range append(secrets, "admin-tok-5150") {
			if strings.Contains(text, s) {
				t.Errorf("the %s holds the secret %q", where, s)
			}
		}
		for _, s := range signs {
			if strings.Contains(lower, strings.ToLower(s)) {
				t.Errorf("the %s holds the sign %q", where, s)
			}
		}
	}
}

func sha256Of(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }

// teeHandler logs to several handlers.
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestInjectedErrorsCarryRetryAfter: the errors fault injection answers
// carry what a real service sends, a Retry-After (1 s unless the faults
// say otherwise; none with "none" or "0"); a bad retry_after is refused,
// naming the field, and changes nothing.
func TestInjectedErrorsCarryRetryAfter(t *testing.T) {
	_, c := testServer(t, nil, Config{AdminToken: "tok"}, nil)
	unreachable := `{"mac":"` + simtest.MACA + `","sn":"` + simtest.SN('a', 4) + `"}`
	for _, tc := range []struct{ set, want string }{
		{``, "1"}, {`,"retry_after":"3"`, "3"}, {`,"retry_after":"1500ms"`, "2"}, {`,"retry_after":"none"`, ""}, {`,"retry_after":"0"`, ""},
	} {
		c.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1`+tc.set+`}`, nil)
		for _, f := range []device.Format{device.JSON, device.XML} {
			r := c.Send(device.SendCommand, f, dimmer(c, c.Envelope(), "40"))
			r.Fail(t, f, http.StatusServiceUnavailable, device.CodeInjectedFault, "")
			if got := r.Header.Get("Retry-After"); got != tc.want {
				t.Errorf("faults %s: injected_fault Retry-After %q, want %q", tc.set, got, tc.want)
			}
		}
		c.AdminJSON(http.MethodPut, "/_sim/faults", `{"offline_gateways":["`+simtest.MACA2+`"],"unreachable_devices":[`+unreachable+`]`+tc.set+`}`, nil)
		off := append(c.Envelope(), simtest.S("sn", simtest.SN('c', 0)), simtest.S("type", "Light Dimmer"), simtest.S("dimming", "5"))
		off = simtest.Set(off, simtest.S("mac", simtest.MACA2))
		r := c.Send(device.SendCommand, device.JSON, off)
		r.Fail(t, device.JSON, http.StatusGatewayTimeout, device.CodeGatewayOffline, "mac")
		if got := r.Header.Get("Retry-After"); got != tc.want {
			t.Errorf("faults %s: gateway_offline Retry-After %q, want %q", tc.set, got, tc.want)
		}
		th := append(c.Envelope(), simtest.S("sn", simtest.SN('a', 4)), simtest.S("type", "Infrared Sensor"), simtest.S("io", "On"))
		r = c.Send(device.SendCommand, device.XML, th)
		r.Fail(t, device.XML, http.StatusGatewayTimeout, device.CodeDeviceUnreachable, "sn")
		if got := r.Header.Get("Retry-After"); got != tc.want {
			t.Errorf("faults %s: device_unreachable Retry-After %q, want %q", tc.set, got, tc.want)
		}
	}
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":0.5,"retry_after":"2"}`, nil)
	for _, bad := range []string{`"soon"`, `"-1s"`, `"2h"`} {
		status, _, b := c.Admin(http.MethodPut, "/_sim/faults", `{"error_rate":1,"retry_after":`+bad+`}`)
		if status != http.StatusBadRequest || !strings.Contains(string(b), "retry_after") {
			t.Errorf("retry_after %s: %d %s, want 400 naming retry_after", bad, status, b)
		}
	}
	var got Faults
	c.AdminJSON(http.MethodGet, "/_sim/faults", "", &got)
	if got.ErrorRate != 0.5 || got.RetryAfter != "2" {
		t.Errorf("a refused change changed the faults: %+v", got)
	}
}

// TestJournalRowOpensMasked: each journal row opens to its request and
// answer (GET /_sim/journal/{id}), in both formats, with the api_key
// masked and the sign replaced; a body that names a sign in a form the
// masking does not read is withheld; a bad id is refused naming it.
func TestJournalRowOpensMasked(t *testing.T) {
	_, c := testServer(t, nil, Config{AdminToken: "tok", Observer: clients.New(clients.Config{Trusted: true})}, nil)
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, f, dimmer(c, c.Envelope(), "41")).OK(t, f)
	}
	env := c.Envelope()
	c.Post(device.SendCommand.Path(), "text/plain", []byte("api_key="+c.APIKey+"&sign="+env[2].Val))
	var journal []Entry
	c.AdminJSON(http.MethodGet, "/_sim/journal", "", &journal)
	if len(journal) != 3 {
		t.Fatalf("journal %+v", journal)
	}
	for i, e := range journal {
		var x ExchangeView
		c.AdminJSON(http.MethodGet, "/_sim/journal/"+strconv.FormatUint(e.ID, 10), "", &x)
		all := x.Request + x.Answer + x.Hidden
		if strings.Contains(all, env[2].Val) || strings.Contains(all, c.Secret) || strings.Contains(all, `"`+c.APIKey+`"`) || strings.Contains(all, ">"+c.APIKey+"<") {
			t.Errorf("row %d carries a secret: %+v", i, x)
		}
		switch i {
		case 0, 1:
			if e.App != "key-…" || !strings.Contains(x.Request, "SIGNATURE") || !strings.Contains(x.Request, "key-…") || !strings.Contains(x.Answer, "success") {
				t.Errorf("row %d: entry %+v, exchange %+v", i, e, x)
			}
		case 2:
			if x.Request != "" || x.Hidden == "" || x.Status != http.StatusUnsupportedMediaType {
				t.Errorf("a text/plain body with a sign: %+v", x)
			}
		}
	}
	for _, bad := range []string{"0", "x", "-1"} {
		if status, _, b := c.Admin(http.MethodGet, "/_sim/journal/"+bad, ""); status != http.StatusBadRequest || !strings.Contains(string(b), `"id"`) {
			t.Errorf("id %s: %d %s", bad, status, b)
		}
	}
	if status, _, _ := c.Admin(http.MethodGet, "/_sim/journal/999999", ""); status != http.StatusNotFound {
		t.Errorf("an id no longer kept: %d, want 404", status)
	}
}

// TestJournalMasksByValue: a request whose member names are escaped
// ("\u0061pi_key", "\u0073ign"), which gwsim accepts, opens from the
// journal with neither its api_key nor its sign in clear, in the request
// or in an answer that repeats them; the fleet's secret never shows.
// Through real HTTP, the admin API as the dashboard reads it.
func TestJournalMasksByValue(t *testing.T) {
	_, c := testServer(t, nil, Config{AdminToken: "tok", Observer: clients.New(clients.Config{Trusted: true})}, nil)
	env := c.Envelope()
	sign := ""
	for _, f := range env {
		if f.Key == "sign" {
			sign = f.Val
		}
	}
	raw := string(simtest.Body(device.JSON, dimmer(c, env, "42")))
	escaped := strings.NewReplacer(`"api_key"`, `"\u0061pi_key"`, `"sign"`, `"\u0073ign"`).Replace(raw)
	if escaped == raw || sign == "" {
		t.Fatalf("the body has no api_key or sign to escape: %s", raw)
	}
	if r := c.Post(device.SendCommand.Path(), "application/json", []byte(escaped)); r.Status != http.StatusOK {
		t.Fatalf("escaped member names: %d %s", r.Status, r.Body)
	}
	// An echo of the secret and the key in a field gwsim repeats in its
	// answer (an unknown field's name is named in the error).
	echo := strings.Replace(escaped, `"control":{`, `"control":{"`+c.APIKey+c.Secret+`":"x",`, 1)
	c.Post(device.SendCommand.Path(), "application/json", []byte(echo))
	var journal []Entry
	c.AdminJSON(http.MethodGet, "/_sim/journal", "", &journal)
	if len(journal) != 2 {
		t.Fatalf("journal %+v", journal)
	}
	for _, e := range journal {
		var x ExchangeView
		c.AdminJSON(http.MethodGet, "/_sim/journal/"+strconv.FormatUint(e.ID, 10), "", &x)
		all := x.Request + x.Answer + x.Hidden
		for _, secret := range []string{sign, strings.ToUpper(sign), c.APIKey, c.Secret} {
			if strings.Contains(all, secret) {
				t.Errorf("journal row %d (%d) shows %q:\n%+v", e.ID, x.Status, secret, x)
			}
		}
		if x.Request == "" && x.Hidden == "" {
			t.Errorf("row %d: neither shown nor said why: %+v", e.ID, x)
		}
	}
}
