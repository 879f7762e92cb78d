package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// serve answers every connection with the bytes answer gives for what was
// read (up to the first empty line and n bytes more), then closes it
// unless keep.
func serve(t *testing.T, answer string, keep bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				var got []byte
				for !strings.Contains(string(got), "\r\n\r\n") {
					n, err := c.Read(buf)
					if err != nil {
						c.Close()
						return
					}
					got = append(got, buf[:n]...)
				}
				io.WriteString(c, answer)
				if keep {
					time.Sleep(2 * time.Second)
				}
				c.(*net.TCPConn).CloseWrite()
				time.Sleep(100 * time.Millisecond)
				c.Close()
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

func roundTrip(t *testing.T, answer string, keep, head bool, timeout time.Duration) (*Response, []byte, error, error) {
	t.Helper()
	base, err := url.Parse(serve(t, answer, keep))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(context.Background(), base, timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := "POST"
	if head {
		m = "HEAD"
	}
	if err := c.Write(Request{Method: m, Path: "/x", Host: "h", Body: []byte("{}")}.Bytes()); err != nil {
		t.Fatal(err)
	}
	r, err := c.ReadResponse(head)
	rest, rerr := c.Rest()
	return r, rest, err, rerr
}

func TestFramings(t *testing.T) {
	const body = `{"status":"success"}`
	for _, c := range []struct {
		name, answer string
		head         bool
		framing      Framing
		body, rest   string
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n" + body, false, ContentLength, body, ""},
		{"content-length one short", "HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\n" + body, false, ContentLength, body[:19], "}"},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"sta\r\nF;ext=1\r\ntus\":\"success\"}\r\n0\r\nX-T: 1\r\n\r\n", false, Chunked, body, ""},
		{"until close", "HTTP/1.0 200 OK\r\n\r\n" + body, false, UntilClose, body, ""},
		{"head with content", "HTTP/1.1 405 No\r\nContent-Length: 20\r\n\r\n" + body, true, NoContent, "", body},
		{"interim then final", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n" + body, false, ContentLength, body, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, rest, err, rerr := roundTrip(t, c.answer, false, c.head, 5*time.Second)
			if err != nil || rerr != nil {
				t.Fatalf("errors %v, %v", err, rerr)
			}
			if r.Framing != c.framing || string(r.Body) != c.body || string(rest) != c.rest {
				t.Errorf("framing %s body %q rest %q; want %s %q %q", r.Framing, r.Body, rest, c.framing, c.body, c.rest)
			}
		})
	}
}

func TestBrokenAnswers(t *testing.T) {
	var short *ShortError
	if _, _, err, _ := roundTrip(t, "HTTP/1.1 200 OK\r\nContent-Length: 21\r\n\r\n{}", false, false, 5*time.Second); !errors.As(err, &short) || short.Want != 21 || short.Got != 2 {
		t.Errorf("a Content-Length longer than the content: %v", err)
	}
	var fe *FramingError
	if _, _, err, _ := roundTrip(t, "{\"status\":\"success\"}", false, false, 5*time.Second); !errors.As(err, &fe) {
		t.Errorf("no status line: %v", err)
	}
	if _, _, err, _ := roundTrip(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, false, 5*time.Second); !errors.As(err, &fe) {
		t.Errorf("a chunk size that is no number: %v", err)
	}
	if _, _, err, _ := roundTrip(t, "", false, false, 5*time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("closed with no answer: %v", err)
	}
	// Kept open past the timeout after the answer: Rest says so.
	if r, _, err, rerr := roundTrip(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", true, false, 300*time.Millisecond); err != nil || r.Status != 200 || !errors.Is(rerr, ErrTimeout) {
		t.Errorf("kept open: %v, %v", err, rerr)
	}
}

func TestRequestBytes(t *testing.T) {
	q := Request{Path: "/v1/x", Proto: "HTTP/1.0", Header: [][2]string{{"Content-Type", "application/json"}}, Body: []byte("abcdefghij")}
	if got, want := string(q.Bytes()), "POST /v1/x HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\nabcdefghij"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	q = Request{Path: "/", Host: "h:1", Body: []byte("abcdefghijklmnopq"), Chunks: []int{3, 11}}
	if got, want := string(q.Bytes()), "POST / HTTP/1.1\r\nHost: h:1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nb\r\ndefghijklmn\r\n3\r\nopq\r\n0\r\n\r\n"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := string(Request{Method: "HEAD", Path: "/"}.Bytes()), "HEAD / HTTP/1.1\r\n\r\n"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
