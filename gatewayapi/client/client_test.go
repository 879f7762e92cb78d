package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

func TestNewChecksConfig(t *testing.T) {
	bad := []Config{
		{BaseURL: ""},
		{BaseURL: "localhost:8080"},
		{BaseURL: "ftp://example.com"},
		{BaseURL: "http://"},
		{BaseURL: "http://:8080"},
		{BaseURL: "http://example.com/?a=b"},
		{BaseURL: "http://example.com/#x"},
		{BaseURL: "http://exa mple.com"},
		{BaseURL: "http://example.com", Timeout: -1},
		{BaseURL: "http://example.com", MaxResponseBytes: -1},
		{BaseURL: "http://example.com", Rate: -1},
	}
	for _, cfg := range bad {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	for base, want := range map[string]string{
		"http://127.0.0.1:8080":      "http://127.0.0.1:8080/v1/services/gateway/command",
		"HTTPS://example.com/api/":   "https://example.com/api/v1/services/gateway/command",
		"http://[::1]:9/prefix/v0/x": "http://[::1]:9/prefix/v0/x/v1/services/gateway/command",
	} {
		c, err := New(Config{BaseURL: base})
		if err != nil {
			t.Errorf("New(%q): %v", base, err)
			continue
		}
		if got := c.URL(device.SendCommand.Path()); got != want {
			t.Errorf("URL for %q = %q, want %q", base, got, want)
		}
	}
}

func TestContentTypeHeader(t *testing.T) {
	target := newCapture(t)
	c := newClient(t, Config{BaseURL: target.srv.URL})
	cases := []struct {
		req  Request
		want []string // nil: no header at all
	}{
		{Request{Format: device.JSON}, []string{"application/json"}},
		{Request{}, []string{"application/json"}},
		{Request{Format: device.XML}, []string{"application/xml"}},
		{Request{Format: device.XML, ContentType: "text/plain; charset=latin1"}, []string{"text/plain; charset=latin1"}},
		{Request{ContentType: NoContentType}, nil},
		{Request{Header: http.Header{"content-type": {"application/x-custom"}}}, []string{"application/x-custom"}},
	}
	for i, tc := range cases {
		tc.req.Path = "/x"
		tc.req.Fields = []Field{{Key: "a", Value: "1"}}
		_, ex, err := c.Do(context.Background(), tc.req)
		if err != nil {
			t.Fatal(err)
		}
		got, present := target.header()["Content-Type"]
		if tc.want == nil {
			if present {
				t.Errorf("case %d: Content-Type %q sent, want none", i, got)
			}
			if !strings.Contains(ex.Curl(), "-H 'Content-Type: '") {
				t.Errorf("case %d: curl would send its own type: %s", i, ex.Curl())
			}
			continue
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || ex.RequestHeaders["Content-Type"] != tc.want[0] {
			t.Errorf("case %d: sent %q, recorded %q, want %q", i, got, ex.RequestHeaders["Content-Type"], tc.want)
		}
	}
}

func TestRawBodySentAsIsAndNotSigned(t *testing.T) {
	target := newCapture(t)
	c := newClient(t, Config{BaseURL: target.srv.URL, Signer: MD5Signer{Secret: "s"}})
	raw := []byte("{\"control\":{\"sign\":\"x\",\xff")
	_, ex, err := c.Do(context.Background(), Request{Path: "/x", RawBody: raw, Fields: []Field{{Key: "sign", Value: "y"}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(target.body()) != string(raw) || ex.RequestBody != string(raw) {
		t.Fatalf("sent %q", target.body())
	}
}

func TestExchangeIsFilled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.WriteHeader(400)
		io.WriteString(w, `<xml><status>error</status><error><code>missing_field</code><field>mac</field><message>mac is required</message></error></xml>`)
	}))
	defer srv.Close()
	var got []Exchange
	var mu sync.Mutex
	c := newClient(t, Config{BaseURL: srv.URL, OnExchange: func(e Exchange) { mu.Lock(); got = append(got, e); mu.Unlock() }})
	resp, ex, err := c.Do(context.Background(), Request{Path: device.SendMessage.Path(), Format: device.XML,
		Fields: []Field{{Key: "message_type", Value: "message"}}, Header: http.Header{"X-Trace": {"t1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 400 || resp.Format != device.XML || resp.StatusField != "error" || resp.ErrorCode != "missing_field" ||
		resp.ErrorField != "mac" || resp.ErrorMessage != "mac is required" || resp.Success() {
		t.Fatalf("response %+v", resp)
	}
	if ex.Method != "POST" || ex.URL != srv.URL+"/v1/services/gateway/message" || ex.Status != 400 ||
		ex.RequestHeaders["Content-Type"] != "application/xml" || ex.RequestHeaders["X-Trace"] != "t1" ||
		!strings.Contains(ex.RequestBody, "<message_type>message</message_type>") ||
		ex.ResponseHeaders["X-Multi"] != "a, b" || ex.ResponseBody != string(resp.Body) || ex.Duration <= 0 || ex.Error != "" {
		t.Fatalf("exchange %+v", ex)
	}
	curl := ex.Curl()
	for _, want := range []string{"-X POST", "'Content-Type: application/xml'", "--data-binary '<?xml", "'" + ex.URL + "'"} {
		if !strings.Contains(curl, want) {
			t.Errorf("curl %s lacks %s", curl, want)
		}
	}
	if len(got) != 1 || got[0].URL != ex.URL {
		t.Fatalf("OnExchange saw %+v", got)
	}
}

func TestLargeBodyIsCutAndNotRead(t *testing.T) {
	const total = 50 << 20
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		buf := []byte(strings.Repeat("x", 32<<10))
		for written.Load() < total {
			n, err := w.Write(buf)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	const max = 1 << 20
	c := newClient(t, Config{BaseURL: srv.URL, MaxResponseBytes: max})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, ex, err := c.Do(context.Background(), Request{Path: "/x"})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Truncated || len(resp.Body) != max || !ex.Truncated || len(ex.ResponseBody) != max {
		t.Fatalf("truncated=%v len=%d", resp.Truncated, len(resp.Body))
	}
	// Reading 50 MB would allocate at least 50 MB; the limit allows a few.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("allocated %d MB for a body cut at 1 MB", alloc>>20)
	}
	if !strings.Contains(resp.ParseError, "cut at the response limit") {
		t.Fatalf("ParseError %q", resp.ParseError)
	}
}

func TestNoAnswerTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var calls atomic.Int32
	c := newClient(t, Config{BaseURL: srv.URL, Timeout: 300 * time.Millisecond, OnExchange: func(Exchange) { calls.Add(1) }})
	start := time.Now()
	resp, ex, err := c.Do(context.Background(), Request{Path: "/x"})
	d := time.Since(start)
	if err == nil || resp != nil {
		t.Fatalf("want an error and no response, got %v %+v", err, resp)
	}
	if d < 300*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %s, want about 300ms", d)
	}
	if !strings.Contains(err.Error(), "within 300ms") || ex.Error != err.Error() || calls.Load() != 1 || ex.Status != 0 {
		t.Fatalf("err %v, exchange %+v, calls %d", err, ex, calls.Load())
	}
}

func TestSlowBodyTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		io.WriteString(w, `{"status":`)
		// Finish after a while, so that a client without a body timeout
		// fails this test instead of hanging it.
		end := time.After(3 * time.Second)
		for {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-end:
				io.WriteString(w, `"success"}`)
				return
			case <-time.After(50 * time.Millisecond):
				io.WriteString(w, " ")
			}
		}
	}))
	defer srv.Close()
	c := newClient(t, Config{BaseURL: srv.URL, Timeout: 300 * time.Millisecond})
	start := time.Now()
	resp, ex, err := c.Do(context.Background(), Request{Path: "/x"})
	if d := time.Since(start); err == nil || d > 2*time.Second {
		t.Fatalf("err %v after %s", err, d)
	}
	if resp == nil || resp.Status != 200 || !strings.HasPrefix(string(resp.Body), `{"status":`) || ex.Status != 200 || ex.Error == "" {
		t.Fatalf("partial answer not kept: %+v %+v", resp, ex)
	}
}

// rawServer answers every connection with handle, for answers no
// http.Handler can give.
func rawServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				// Read the request head so the close is not a reset
				// before the client has written.
				br := bufio.NewReader(conn)
				if req, err := http.ReadRequest(br); err == nil {
					io.Copy(io.Discard, req.Body)
				}
				handle(conn)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestServerClosesMidResponse(t *testing.T) {
	url := rawServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"status\":\"succ")
	})
	c := newClient(t, Config{BaseURL: url, Timeout: 2 * time.Second})
	resp, ex, err := c.Do(context.Background(), Request{Path: "/x"})
	if err == nil || !strings.Contains(err.Error(), "reading the body") {
		t.Fatalf("want a body read error, got %v", err)
	}
	if resp == nil || resp.Status != 200 || string(resp.Body) != `{"status":"succ` || resp.Success() || ex.Error == "" {
		t.Fatalf("partial answer: %+v %+v", resp, ex)
	}
}

func TestServerClosesOrSendsGarbage(t *testing.T) {
	for name, handle := range map[string]func(net.Conn){
		"close":     func(net.Conn) {},
		"garbage":   func(c net.Conn) { c.Write([]byte("\x00\xffnot http at all\r\n\r\n")) },
		"bad head":  func(c net.Conn) { io.WriteString(c, "HTTP/1.1 2000 OK\r\n\r\n") },
		"huge head": func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nX: "+strings.Repeat("a", 1<<20)+"\r\n\r\n") },
		"bad chunk": func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n")
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, Config{BaseURL: rawServer(t, handle), Timeout: 2 * time.Second})
			_, ex, err := c.Do(context.Background(), Request{Path: "/x"})
			if err == nil || ex.Error == "" {
				t.Fatalf("want an error, got %v %+v", err, ex)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, Config{BaseURL: "http://" + addr, Timeout: time.Second})
	if _, ex, err := c.Do(context.Background(), Request{Path: "/x"}); err == nil || ex.Error == "" {
		t.Fatalf("want an error, got %v", err)
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		io.WriteString(w, `{"status":"success"}`)
	}))
	defer other.Close()
	var selfHits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			selfHits.Add(1)
			io.WriteString(w, `{"status":"success"}`)
			return
		}
		to := other.URL + "/steal"
		if r.URL.Path == "/local" {
			to = "/same"
		}
		http.Redirect(w, r, to, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := newClient(t, Config{BaseURL: srv.URL})
	for path, loc := range map[string]string{"/away": other.URL + "/steal", "/local": "/same"} {
		resp, ex, err := c.Do(context.Background(), Request{Path: path, Fields: []Field{{Key: "api_key", Value: "k"}}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusTemporaryRedirect || ex.ResponseHeaders["Location"] != loc || resp.Header.Get("Location") != loc || resp.Success() {
			t.Fatalf("%s: status %d, location %q", path, resp.Status, ex.ResponseHeaders["Location"])
		}
	}
	if otherHits.Load() != 0 || selfHits.Load() != 0 {
		t.Fatalf("redirect followed: other %d, same host %d", otherHits.Load(), selfHits.Load())
	}
}

func TestRateLimitSpacesRequests(t *testing.T) {
	target := newCapture(t)
	const n, rate = 6, 20.0
	c := newClient(t, Config{BaseURL: target.srv.URL, Rate: rate})
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := c.Do(context.Background(), Request{Path: "/x"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	min := time.Duration(float64(n-1) / rate * float64(time.Second))
	if d := time.Since(start); d < min {
		t.Fatalf("%d requests at %v/s took %s, want at least %s", n, rate, d, min)
	}
	if target.hits.Load() != n {
		t.Fatalf("%d requests arrived", target.hits.Load())
	}
}

func TestRateLimitWaitHonoursCancel(t *testing.T) {
	target := newCapture(t)
	c := newClient(t, Config{BaseURL: target.srv.URL, Rate: 0.5})
	if _, _, err := c.Do(context.Background(), Request{Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := c.Do(ctx, Request{Path: "/x"}); err == nil || time.Since(start) > time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
	if target.hits.Load() != 1 {
		t.Fatalf("%d requests arrived", target.hits.Load())
	}
}

func TestConcurrentUse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		// Echo the request's name back as the error message.
		fmt.Fprintf(w, `{"status":"error","error":{"message":%q}}`, string(b))
	}))
	defer srv.Close()
	var seen atomic.Int64
	c := newClient(t, Config{BaseURL: srv.URL, Signer: MD5Signer{Secret: "s"}, OnExchange: func(Exchange) { seen.Add(1) }})
	shared := []Field{{Key: "api_key", Value: "k"}, {Key: "sign", Value: ""}}
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				fields := append(append([]Field(nil), shared...), Field{Key: "n", Value: fmt.Sprintf("%d-%d", g, i)})
				resp, _, err := c.Do(context.Background(), Request{Path: "/x", Fields: fields})
				if err != nil {
					t.Error(err)
					return
				}
				if want := fmt.Sprintf(`"n":"%d-%d"`, g, i); !strings.Contains(resp.ErrorMessage, want) {
					t.Errorf("answer %q for request %s", resp.ErrorMessage, want)
				}
			}
		}()
	}
	wg.Wait()
	if seen.Load() != 32*20 {
		t.Fatalf("OnExchange called %d times", seen.Load())
	}
}

func TestHostHeaderAndMethod(t *testing.T) {
	var host, method atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host.Store(r.Host)
		method.Store(r.Method)
		w.Header().Set("Allow", "POST")
		w.WriteHeader(405)
	}))
	defer srv.Close()
	c := newClient(t, Config{BaseURL: srv.URL})
	resp, ex, err := c.Do(context.Background(), Request{Path: "/x", Method: "PUT", Header: http.Header{"Host": {"gw.example"}}})
	if err != nil {
		t.Fatal(err)
	}
	if host.Load() != "gw.example" || method.Load() != "PUT" || resp.Status != 405 || resp.Header.Get("Allow") != "POST" || ex.Method != "PUT" || ex.RequestHeaders["Host"] != "gw.example" {
		t.Fatalf("host %v method %v status %d", host.Load(), method.Load(), resp.Status)
	}
	if _, ex, err := c.Do(context.Background(), Request{Path: "/x", Method: "BAD METHOD"}); err == nil || ex.Error == "" {
		t.Fatalf("invalid method accepted: %v", err)
	}
}
