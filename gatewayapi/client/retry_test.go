package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// shedding answers the first n requests with status and Retry-After, then
// success, counting what it got.
func shedding(t *testing.T, n int32, status int, retryAfter string) (*httptest.Server, *atomic.Int32) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got.Add(1) <= n {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write([]byte(`{"status":"error","error":{"code":"rate_limited","message":"slow down"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestRetryAfterIsWaitedOut(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		srv, got := shedding(t, 2, status, "0")
		var seen []Exchange
		c := newClient(t, Config{BaseURL: srv.URL, OnExchange: func(e Exchange) { seen = append(seen, e) }})
		r, ex, err := c.Do(context.Background(), Request{Path: device.SendCommand.Path(), Fields: []Field{{Key: "a", Value: "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 200 || r.StatusField != "success" {
			t.Errorf("%d twice then 200: got %d %q", status, r.Status, r.StatusField)
		}
		if got.Load() != 3 || ex.Retries != 2 {
			t.Errorf("%d: sent %d times, exchange says %d retries; want 3 and 2", status, got.Load(), ex.Retries)
		}
		if n, waited := c.Retried(); n != 2 || waited <= 0 {
			t.Errorf("%d: Retried() = %d, %s", status, n, waited)
		}
		if len(seen) != 3 || seen[0].RetriedAfter <= 0 || seen[0].Status != status || seen[2].RetriedAfter != 0 {
			t.Errorf("%d: every exchange, the retried ones too, is reported: %+v", status, seen)
		}
	}
}

func TestRetryOnlyWhenAskedAndAffordable(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		retryAfter string
		budget     time.Duration
	}{
		{"503 without Retry-After (an injected fault) stands", http.StatusServiceUnavailable, "", 0},
		{"429 without Retry-After stands", http.StatusTooManyRequests, "", 0},
		{"500 with Retry-After stands", http.StatusInternalServerError, "0", 0},
		{"a wait beyond MaxRetryAfter stands", http.StatusTooManyRequests, "3600", 0},
		{"a garbled Retry-After stands", http.StatusTooManyRequests, "soon", 0},
		{"no retries when the budget is negative", http.StatusTooManyRequests, "0", -1},
		{"a spent budget stands", http.StatusTooManyRequests, "1", 500 * time.Millisecond},
	}
	for _, tc := range cases {
		srv, got := shedding(t, 100, tc.status, tc.retryAfter)
		c := newClient(t, Config{BaseURL: srv.URL, RetryBudget: tc.budget})
		r, _, err := c.Do(context.Background(), Request{Path: "/x", Fields: []Field{{Key: "a", Value: "b"}}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Status != tc.status || got.Load() != 1 {
			t.Errorf("%s: got %d after %d requests; want %d after 1", tc.name, r.Status, got.Load(), tc.status)
		}
	}
}

func TestRetryGivesUpAfterMaxRetries(t *testing.T) {
	srv, got := shedding(t, 100, http.StatusTooManyRequests, "0")
	c := newClient(t, Config{BaseURL: srv.URL})
	r, ex, err := c.Do(context.Background(), Request{Path: "/x", Fields: []Field{{Key: "a", Value: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 429 || got.Load() != MaxRetries+1 || ex.Retries != MaxRetries {
		t.Errorf("got %d after %d requests (%d retries); want 429 after %d", r.Status, got.Load(), ex.Retries, MaxRetries+1)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Response{Status: 429, Header: http.Header{"Retry-After": {now.Add(2 * time.Second).Format(http.TimeFormat)}}}
	if d, ok := RetryAfter(r, now); !ok || d != 2*time.Second {
		t.Errorf("HTTP date two seconds ahead: %s %v", d, ok)
	}
}

// TestRatePerPath: each path gets at most its own rate, whatever the other
// paths do; the overall rate is not limited by it.
func TestRatePerPath(t *testing.T) {
	var mu sync.Mutex
	at := map[string][]time.Time{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at[r.URL.Path] = append(at[r.URL.Path], time.Now())
		mu.Unlock()
		w.Write([]byte(`{"status":"success"}`))
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, Config{BaseURL: srv.URL, RatePerPath: 20})
	var wg sync.WaitGroup
	for _, p := range []string{"/a", "/b"} {
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.Do(context.Background(), Request{Path: p, RawBody: []byte("{}")})
			}()
		}
	}
	wg.Wait()
	for p, ts := range at {
		if len(ts) != 6 {
			t.Fatalf("%s got %d requests", p, len(ts))
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		if span := ts[5].Sub(ts[0]); span < 5*45*time.Millisecond {
			t.Errorf("%s: 6 requests at 20/s came within %s", p, span)
		}
	}
	if _, err := New(Config{BaseURL: srv.URL, RatePerPath: -1}); err == nil {
		t.Error("a negative RatePerPath was accepted")
	}
}

// TestSharedBackoffHoldsEveryRequest: with SharedBackoff, one answer that
// asks to wait holds back the requests of other goroutines too, until its
// wait is over; without it, they go at once. A renewed attempt (Renew)
// carries the fields Renew gives, and the answer keeps the earlier attempt.
func TestSharedBackoffHoldsEveryRequest(t *testing.T) {
	for _, shared := range []bool{true, false} {
		var mu sync.Mutex
		var arrived []time.Time
		var asked time.Time
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			first := asked.IsZero()
			if first {
				asked = time.Now()
			} else {
				arrived = append(arrived, time.Now())
			}
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if first {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write([]byte(`{"status":"error","error":{"code":"rate_limited","message":"slow down"}}`))
				return
			}
			w.Write([]byte(`{"status":"success"}`))
		}))
		c, err := New(Config{BaseURL: srv.URL, SharedBackoff: shared})
		if err != nil {
			t.Fatal(err)
		}
		// Each attempt is written as it goes: the first once the back-off
		// it may wait for is over, the retry after the Retry-After.
		var renewals atomic.Int64
		req := Request{Path: "/v1/services/gateway/message", Fields: []Field{{Key: "n", Value: "1"}},
			Renew: func() []Field { return []Field{{Key: "n", Value: fmt.Sprint(10 + renewals.Add(1))}} }}
		var wg sync.WaitGroup
		wg.Add(1)
		var ex Exchange
		go func() { defer wg.Done(); _, ex, _ = c.Do(context.Background(), req) }()
		time.Sleep(200 * time.Millisecond)
		if _, _, err := c.Do(context.Background(), Request{Path: "/v1/services/gateway/message", Fields: []Field{{Key: "n", Value: "3"}}}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		srv.Close()
		mu.Lock()
		early := 0
		for _, at := range arrived {
			if at.Sub(asked) < 900*time.Millisecond {
				early++
			}
		}
		mu.Unlock()
		if shared && early != 0 {
			t.Errorf("shared back-off: %d request(s) sent before the Retry-After of another's answer ended", early)
		}
		if !shared && early != 1 {
			t.Errorf("without a shared back-off the other goroutine's request waited (%d early)", early)
		}
		if renewals.Load() != 2 || len(ex.Earlier) != 1 || ex.Earlier[0].Status != http.StatusTooManyRequests || ex.Earlier[0].RetriedAfter != time.Second ||
			!strings.Contains(ex.RequestBody, `"n":"12"`) || !strings.Contains(ex.Earlier[0].RequestBody, `"n":"11"`) {
			t.Errorf("the attempts: %d renewals, earlier %+v, body %s", renewals.Load(), ex.Earlier, ex.RequestBody)
		}
	}
}
