package client

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestParseBaseURL: one reading of a base URL, normalized, with errors that
// never quote a password.
func TestParseBaseURL(t *testing.T) {
	for raw, want := range map[string][2]string{
		"http://127.0.0.1:8080":             {"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		"HTTPS://example.com/api//":         {"https://example.com/api", "https://example.com/api"},
		"http://gw:pw@example.com/":         {"http://gw:pw@example.com", "http://example.com"},
		"http://[::1]:9/prefix/v0/x":        {"http://[::1]:9/prefix/v0/x", "http://[::1]:9/prefix/v0/x"},
		"https://gw@staging.example.com:99": {"https://gw@staging.example.com:99", "https://staging.example.com:99"},
	} {
		b, err := ParseBaseURL(raw)
		if err != nil {
			t.Errorf("ParseBaseURL(%q): %v", raw, err)
			continue
		}
		if b.String() != want[0] || b.Redacted() != want[1] {
			t.Errorf("ParseBaseURL(%q) = %q, redacted %q; want %q, %q", raw, b.String(), b.Redacted(), want[0], want[1])
		}
		// URL is the same, parsed, and a copy: changing it changes
		// nothing of b.
		u := b.URL()
		if u.String() != want[0] {
			t.Errorf("ParseBaseURL(%q).URL() = %q, want %q", raw, u, want[0])
		}
		u.Host, u.User = "elsewhere", nil
		if b.URL().String() != want[0] {
			t.Errorf("ParseBaseURL(%q): a change to URL()'s copy reached the base URL", raw)
		}
	}
	for raw, want := range map[string]string{
		"":                           `"" must start with http:// or https://`,
		"ftp://gw:pw@example.com":    `"ftp://example.com" must start with http:// or https://`,
		"http://":                    `"http:" has no host`,
		"http://:8080":               `"http://:8080" has no host`,
		"http://gw:pw@x/?a=b":        `"http://x/?a=b" must not have a query or fragment`,
		"http://gw:pw@exa mple.com/": `does not parse: invalid character " " in host name`,
	} {
		_, err := ParseBaseURL(raw)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw") {
			t.Errorf("ParseBaseURL(%q): %v, want %q and no password", raw, err, want)
		}
	}
}

func TestNewAtTakesTheParsedBaseURL(t *testing.T) {
	b, err := ParseBaseURL("http://127.0.0.1:8080/api/")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewAt(b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.URL("/x"); got != "http://127.0.0.1:8080/api/x" {
		t.Errorf("URL = %q", got)
	}
	if _, err := NewAt(BaseURL{}, Config{}); err == nil {
		t.Error("NewAt accepted a BaseURL ParseBaseURL did not make")
	}
	if _, err := NewAt(b, Config{BaseURL: "http://other"}); err == nil {
		t.Error("NewAt accepted a second base URL in Config")
	}
	if _, err := New(Config{BaseURL: "ftp://gw:pw@x"}); err == nil || err.Error() != `client: base URL "ftp://x" must start with http:// or https://` {
		t.Errorf("New: %v", err)
	}
}

// TestReach: connected is enough, whatever the target then does; no
// connection is an error without the URL; the HEAD goes through the
// client's own transport.
func TestReach(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	silent := newClient(t, Config{BaseURL: "http://gw:pw@" + ln.Addr().String(), Timeout: 200 * time.Millisecond})
	if err := silent.Reach(context.Background()); err != nil {
		t.Errorf("a target that accepts and never answers: %v, want reached", err)
	}

	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := refused.Addr().String()
	refused.Close()
	c := newClient(t, Config{BaseURL: "http://gw:pw@" + addr, Timeout: time.Second})
	if err := c.Reach(context.Background()); err == nil || strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "http://") {
		t.Errorf("a refused connection: %v, want its cause without the URL", err)
	}

	var heads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && r.URL.Path == "/api/" && r.UserAgent() == UserAgent {
			heads.Add(1)
		}
	}))
	defer srv.Close()
	var through atomic.Int32
	rt := roundTripper(func(r *http.Request) (*http.Response, error) {
		through.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})
	c = newClient(t, Config{BaseURL: srv.URL + "/api", Transport: rt})
	if err := c.Reach(context.Background()); err != nil || heads.Load() != 1 || through.Load() != 1 {
		t.Errorf("Reach: %v; HEAD /api/ seen %d times, through the client's transport %d times; want nil, 1, 1", err, heads.Load(), through.Load())
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
