package client

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antchfx/xmlquery"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// capture is a target that records the last request body and answers
// success.
type capture struct {
	srv  *httptest.Server
	hits atomic.Int64
	last atomic.Value // []byte
	hdr  atomic.Value // http.Header
}

func newCapture(t *testing.T) *capture {
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.hits.Add(1)
		c.last.Store(b)
		c.hdr.Store(r.Header.Clone())
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success"}`)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) body() []byte {
	b, _ := c.last.Load().([]byte)
	return b
}

func (c *capture) header() http.Header {
	h, _ := c.hdr.Load().(http.Header)
	return h
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// controlValue reads one field from a sent body of either format.
func controlValue(t *testing.T, format device.Format, body []byte, key string) (string, bool) {
	t.Helper()
	if format == device.XML {
		doc, err := xmlquery.Parse(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("sent XML does not parse: %v\n%s", err, body)
		}
		n := xmlquery.FindOne(doc, "/xml/control/"+key)
		if n == nil {
			return "", false
		}
		return n.InnerText(), true
	}
	var v struct{ Control map[string]any }
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("sent JSON does not parse: %v\n%s", err, body)
	}
	s, ok := v.Control[key]
	if !ok {
		return "", false
	}
	str, _ := s.(string)
	return str, true
}

var testKey = fleet.APIKey{Key: "demo-key", Secret: "demo-secret"}

func TestSignAutoSignsWhatIsSent(t *testing.T) {
	target := newCapture(t)
	c := newClient(t, Config{BaseURL: target.srv.URL, Signer: MD5Signer{Secret: testKey.Secret}})
	for _, format := range []device.Format{device.JSON, device.XML} {
		t.Run(format.String(), func(t *testing.T) {
			fields := c.Envelope(testKey, "5f3a9c0e1b2d4f6a8c0e1b2d", "a4c138f0e2b1", time.Now(), nil)
			// A check alters the timestamp after building the envelope; the
			// sign must follow what is sent, not what was built.
			fields[1].Value = "20200101000000"
			fields[0].Value = "other-key"
			before := append([]Field(nil), fields...)
			resp, _, err := c.Do(context.Background(), Request{Path: device.SendCommand.Path(), Format: format, Fields: fields})
			if err != nil || !resp.Success() {
				t.Fatalf("Do: %v %+v", err, resp)
			}
			sign, _ := controlValue(t, format, target.body(), "sign")
			if want := auth.Sign("other-key", testKey.Secret, "20200101000000"); sign != want {
				t.Fatalf("sent sign %q, want md5 of what was sent %q", sign, want)
			}
			for i := range fields {
				if fields[i] != before[i] {
					t.Fatalf("Do changed the caller's fields: %v", fields)
				}
			}
		})
	}
}

func TestSignAutoWithoutSignFieldAddsNone(t *testing.T) {
	target := newCapture(t)
	c := newClient(t, Config{BaseURL: target.srv.URL, Signer: MD5Signer{Secret: "s"}})
	fields := []Field{{Key: "api_key", Value: "k"}, {Key: "timestamp", Value: "20240101000000"}}
	if _, _, err := c.Do(context.Background(), Request{Path: "/x", Fields: fields}); err != nil {
		t.Fatal(err)
	}
	if _, ok := controlValue(t, device.JSON, target.body(), "sign"); ok {
		t.Fatalf("a sign was added: %s", target.body())
	}
}

func TestSignKeepSendsSignAsGiven(t *testing.T) {
	target := newCapture(t)
	c := newClient(t, Config{BaseURL: target.srv.URL, Signer: MD5Signer{Secret: "s"}})
	fields := c.Envelope(testKey, "a", "b", time.Now(), nil)
	fields[2].Value = "deadbeef"
	for _, format := range []device.Format{device.JSON, device.XML} {
		if _, _, err := c.Do(context.Background(), Request{Path: "/x", Format: format, Fields: fields, Sign: SignKeep}); err != nil {
			t.Fatal(err)
		}
		if sign, _ := controlValue(t, format, target.body(), "sign"); sign != "deadbeef" {
			t.Fatalf("%s: sent sign %q", format, sign)
		}
	}
}

func TestSignAutoWithoutSignerSendsNothing(t *testing.T) {
	target := newCapture(t)
	var seen []Exchange
	c := newClient(t, Config{BaseURL: target.srv.URL, OnExchange: func(e Exchange) { seen = append(seen, e) }})
	_, ex, err := c.Do(context.Background(), Request{Path: "/x", Fields: c.Envelope(testKey, "a", "b", time.Now(), nil)})
	if err == nil || !strings.Contains(err.Error(), "Signer") {
		t.Fatalf("want an error naming the missing Signer, got %v", err)
	}
	if target.hits.Load() != 0 {
		t.Fatal("a request went out unsigned")
	}
	if ex.Error == "" || len(seen) != 1 || seen[0].Error == "" {
		t.Fatalf("failed exchange not recorded: %+v %+v", ex, seen)
	}
}

func TestMD5SignerUsesKeyFieldElseFallback(t *testing.T) {
	s := MD5Signer{APIKey: "fallback", Secret: "sec"}
	got, _ := s.Sign(context.Background(), []Field{{Key: "api_key", Value: "real"}, {Key: "timestamp", Value: json.Number("20240101000000")}})
	if got != auth.Sign("real", "sec", "20240101000000") {
		t.Fatalf("with api_key field: %s", got)
	}
	got, _ = s.Sign(context.Background(), []Field{{Key: "timestamp", Value: "20240101000000"}})
	if got != auth.Sign("fallback", "sec", "20240101000000") {
		t.Fatalf("without api_key field: %s", got)
	}
}

func TestFormatSignerIsWellFormed(t *testing.T) {
	a, err := FormatSigner{}.Sign(context.Background(), []Field{{Key: "api_key", Value: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := FormatSigner{}.Sign(context.Background(), []Field{{Key: "api_key", Value: "b"}})
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a) || a == b {
		t.Fatalf("signs %q %q: want 32 hex, different for different fields", a, b)
	}
}

func needShell(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
}

func TestCommandSignerReadsFieldsOnStdin(t *testing.T) {
	needShell(t)
	if _, err := exec.LookPath("md5sum"); err != nil {
		t.Skip("no md5sum")
	}
	// The script signs the md5 of its whole stdin, so the test sees exactly
	// what the command was given; the padding checks the trimming.
	s := CommandSigner{Argv: []string{"sh", "-c", `sum=$(md5sum | cut -c1-32); printf '  %s \n\n' "$sum"`}}
	fields := []Field{{Key: "api_key", Value: "k"}, {Key: "dimming", Value: json.Number("5")}, {Key: "cooling point", Value: "2<3"}}
	got, err := s.Sign(context.Background(), fields)
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte(`{"api_key":"k","dimming":5,"cooling point":"2<3"}`))
	if want := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("sign %q, want %q (md5 of the fields as one JSON object)", got, want)
	}

	// Through Do: the command must not see the sign field, and its output
	// is what is sent.
	target := newCapture(t)
	c := newClient(t, Config{BaseURL: target.srv.URL, Signer: CommandSigner{Argv: []string{"sh", "-c",
		`in=$(cat); case "$in" in *sign*) echo "saw sign: $in" >&2; exit 1;; esac; echo 0123456789ABCDEF0123456789ABCDEF`}}})
	if _, _, err := c.Do(context.Background(), Request{Path: "/x", Fields: c.Envelope(testKey, "a", "b", time.Now(), nil)}); err != nil {
		t.Fatal(err)
	}
	if sign, _ := controlValue(t, device.JSON, target.body(), "sign"); sign != "0123456789ABCDEF0123456789ABCDEF" {
		t.Fatalf("sent sign %q", sign)
	}
}

func TestCommandSignerFailures(t *testing.T) {
	needShell(t)
	cases := []struct {
		name   string
		argv   []string
		expect []string
	}{
		{"exit status", []string{"sh", "-c", `cat >/dev/null; echo "no secret configured" >&2; exit 3`}, []string{"exit status 3", "no secret configured"}},
		{"empty output", []string{"sh", "-c", `cat >/dev/null`}, []string{"no sign"}},
		{"two lines", []string{"sh", "-c", `echo a; echo b`}, []string{"more than one line"}},
		{"endless output", []string{"sh", "-c", `yes | head -c 100000`}, []string{"more than"}},
		{"missing program", []string{"/nonexistent/sign.sh"}, []string{"/nonexistent/sign.sh"}},
		{"no program", nil, []string{"no program"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CommandSigner{Argv: tc.argv}.Sign(context.Background(), []Field{{Key: "api_key", Value: "k"}})
			if err == nil {
				t.Fatalf("want an error, got sign %q", s)
			}
			for _, e := range tc.expect {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("error %q does not mention %q", err, e)
				}
			}
		})
	}
}

func TestCommandSignerTimeout(t *testing.T) {
	needShell(t)
	start := time.Now()
	// The shell's child keeps the pipes open after the shell is killed.
	_, err := CommandSigner{Argv: []string{"sh", "-c", "sleep 30; echo x"}, Timeout: 200 * time.Millisecond}.
		Sign(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatalf("want a timeout error, got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s", d)
	}
}
