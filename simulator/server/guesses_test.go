package server

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// fromAddr is an HTTP client whose connections come from the loopback
// address ip (all of 127.0.0.0/8 is this machine's).
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

func bearerCall(t *testing.T, c *http.Client, method, url, token string) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Header
}

// TestBearerGuessingIsLimited: wrong admin tokens in Authorization are
// counted per client on every admin path and /metrics, as sign-ins are:
// signInBurst of them get 401, then the client is held back (429 with
// Retry-After, on every admin path, even with the right token, so that a
// guess is never confirmed); another client is not; the right token is
// never counted, however often it is sent; a refused change changes
// nothing.
func TestBearerGuessingIsLimited(t *testing.T) {
	const token = "the-right-admin-token-0123456789abcdef"
	_, c := testServer(t, nil, Config{AdminToken: token}, nil)
	one, other := fromAddr("127.0.0.1"), fromAddr("127.0.0.2")
	for i := 0; i < 5*signInBurst; i++ {
		if status, _ := bearerCall(t, one, "GET", c.Base+"/_sim/state?limit=1", token); status != http.StatusOK {
			t.Fatalf("right token %d: %d", i, status)
		}
	}
	paths := []string{"GET /_sim/state", "GET /metrics", "POST /_sim/reset", "GET /_sim/faults", "GET /_sim/journal"}
	for i := 0; i < signInBurst; i++ {
		p := strings.Fields(paths[i%len(paths)])
		if status, _ := bearerCall(t, one, p[0], c.Base+p[1], "guess-"+string(rune('a'+i))); status != http.StatusUnauthorized {
			t.Fatalf("guess %d (%s): %d, want 401", i, p, status)
		}
	}
	for _, p := range paths {
		f := strings.Fields(p)
		for _, tok := range []string{"guess-z", token} {
			status, h := bearerCall(t, one, f[0], c.Base+f[1], tok)
			if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
				t.Errorf("%s after %d guesses (right token: %v): %d %v, want 429 with Retry-After", p, signInBurst, tok == token, status, h)
			}
		}
	}
	if status, _ := bearerCall(t, other, "GET", c.Base+"/_sim/state?limit=1", token); status != http.StatusOK {
		t.Errorf("another client with the right token: %d, want 200", status)
	}
}
