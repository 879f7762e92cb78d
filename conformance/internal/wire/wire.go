// Package wire speaks HTTP/1.x to a target byte by byte, for the checks of
// HTTP's own rules (RFC 9110, RFC 9112): it writes requests exactly as
// given (an HTTP/1.0 request line, a chunked body, an Expect header, several
// requests at once) and reads each answer as the bytes came, telling how it
// was framed (Content-Length, chunked, or the connection's close) and
// whatever arrived past its end. A client library would hide all of that.
//
// Every read is bounded: a whole answer (or what is read after one) in time
// by the timeout the run was given, however slowly its bytes come, and in
// size by MaxHead and MaxBody. A target that breaks the framing never makes the
// reader panic or hang; it gets an error that says what was seen.
package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Bounds of what is read of one answer.
const (
	MaxHead = 64 << 10
	MaxBody = 1 << 20
)

// Framing is how an answer's end was told (RFC 9112 6.3).
type Framing string

const (
	// NoContent: an answer to HEAD, or a 1xx, 204 or 304, ends with its
	// header section.
	NoContent     Framing = "no content"
	ContentLength Framing = "Content-Length"
	Chunked       Framing = "chunked"
	// UntilClose: neither length nor chunked: the content runs until the
	// server closes the connection.
	UntilClose Framing = "until close"
)

// Response is one answer as read off the connection.
type Response struct {
	// Proto is the status line's version ("HTTP/1.1"), Status its code.
	Proto  string
	Status int
	Header http.Header
	// Head is the status line and header section as they came.
	Head []byte
	// Body is the content, chunked coding removed.
	Body    []byte
	Framing Framing
	// Length is the Content-Length's value (-1 when absent or unreadable).
	Length int64
	// Interim holds the 1xx answers that came before this one.
	Interim []*Response
}

// Connection is the value of the Connection header, lower-cased.
func (r *Response) Connection() string {
	return strings.ToLower(strings.Join(r.Header.Values("Connection"), ", "))
}

// TransferEncoding is the Transfer-Encoding header as sent ("" when none).
func (r *Response) TransferEncoding() string {
	return strings.Join(r.Header.Values("Transfer-Encoding"), ", ")
}

// Errors of a read. ErrClosed: the server closed the connection (a FIN or
// a reset) before the first byte of an answer, which a server may do after
// any answer. ErrTimeout: what was read did not end within the timeout
// (errors.Is matches the TimeoutError a read gives).
var (
	ErrClosed  = errors.New("the connection was closed")
	ErrTimeout = errors.New("time-out")
)

// TimeoutError is a read that did not end within the timeout: its text
// says so as every answer of the run that does not come whole does.
type TimeoutError struct{ After time.Duration }

func (e *TimeoutError) Error() string        { return fmt.Sprintf("no complete answer within %s", e.After) }
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// ShortError is an answer that ended (the connection closed) before the
// length its framing announced.
type ShortError struct {
	Framing   Framing
	Want, Got int64
}

func (e *ShortError) Error() string {
	if e.Framing == ContentLength {
		return fmt.Sprintf("the connection closed after %d of the %d bytes of content its Content-Length announced", e.Got, e.Want)
	}
	return fmt.Sprintf("the connection closed in the middle of the chunked content, after %d bytes", e.Got)
}

// FramingError is an answer whose bytes are not an HTTP/1.x message.
type FramingError struct{ What string }

func (e *FramingError) Error() string { return e.What }

// Conn is one connection to the target.
type Conn struct {
	nc      net.Conn
	r       *bufio.Reader
	timeout time.Duration
}

// Dial opens a connection to the host of base (http or https), bounded by
// timeout (also every read's and write's bound afterwards).
func Dial(ctx context.Context, base *url.URL, timeout time.Duration) (*Conn, error) {
	u := base
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	d := &net.Dialer{Timeout: timeout}
	var (
		nc  net.Conn
		err error
	)
	switch u.Scheme {
	case "http":
		nc, err = d.DialContext(ctx, "tcp", host)
	case "https":
		td := &tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: u.Hostname(), NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}}
		nc, err = td.DialContext(ctx, "tcp", host)
	default:
		return nil, fmt.Errorf("wire: scheme %q: want http or https", u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, r: bufio.NewReaderSize(nc, 16<<10), timeout: timeout}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Write writes b whole.
func (c *Conn) Write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	_, err := c.nc.Write(b)
	return err
}

// arm bounds what is read from now on, as a whole, by the timeout.
func (c *Conn) arm() { c.nc.SetReadDeadline(time.Now().Add(c.timeout)) }

// readErr names what a failed read means: a close, a time-out, or another
// error as it is.
func (c *Conn) readErr(err error) error {
	var ne net.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return ErrClosed
	case errors.As(err, &ne) && ne.Timeout():
		return &TimeoutError{After: c.timeout}
	}
	return err
}

// Buffered is how many bytes have arrived and not been read.
func (c *Conn) Buffered() int { return c.r.Buffered() }

// Peek waits for the next n bytes, or for as many as come before the
// connection closes or the timeout ends, and gives them without reading
// them.
func (c *Conn) Peek(n int) ([]byte, error) {
	c.arm()
	b, err := c.r.Peek(n)
	return b, c.readErr(err)
}

// Rest reads what is left until the server closes the connection (err
// nil), the timeout ends (ErrTimeout) or MaxBody bytes came (a
// FramingError).
func (c *Conn) Rest() ([]byte, error) {
	c.arm()
	return c.rest()
}

func (c *Conn) rest() ([]byte, error) {
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if err = c.readErr(err); err == ErrClosed {
				return out, nil
			}
			return out, err
		}
		if len(out) > MaxBody {
			return out[:MaxBody], &FramingError{What: fmt.Sprintf("more than %d bytes before the connection closed", MaxBody)}
		}
	}
}

// ReadResponse reads the next final answer, keeping the 1xx before it in
// Interim. head says the request was HEAD: its answer has no content.
func (c *Conn) ReadResponse(head bool) (*Response, error) {
	var interim []*Response
	for {
		r, err := c.readOne(head)
		if err != nil {
			return r, err
		}
		if r.Status >= 200 || r.Status == 101 {
			r.Interim = interim
			return r, nil
		}
		interim = append(interim, r)
	}
}

// ReadInterimOrFinal reads the next answer, a 1xx included (for a request
// whose content waits on a 100 Continue).
func (c *Conn) ReadInterimOrFinal(head bool) (*Response, error) { return c.readOne(head) }

func (c *Conn) readOne(head bool) (*Response, error) {
	c.arm()
	h, err := c.readHead()
	if err != nil {
		return nil, err
	}
	r := &Response{Head: h, Length: -1}
	if err := r.parseHead(h); err != nil {
		return r, err
	}
	return r, c.readBody(r, head)
}

// readHead reads up to the empty line that ends the header section.
func (c *Conn) readHead() ([]byte, error) {
	var h []byte
	for {
		line, err := c.r.ReadSlice('\n')
		h = append(h, line...)
		if err == bufio.ErrBufferFull {
			if len(h) > MaxHead {
				return h, &FramingError{What: fmt.Sprintf("the header section is longer than %d bytes", MaxHead)}
			}
			continue
		}
		if err != nil {
			if len(h) == 0 {
				return nil, c.readErr(err)
			}
			if e := c.readErr(err); e != ErrClosed {
				return h, e
			}
			return h, &FramingError{What: fmt.Sprintf("the connection closed in the middle of a header section: %q", clip(h))}
		}
		if len(h) > MaxHead {
			return h, &FramingError{What: fmt.Sprintf("the header section is longer than %d bytes", MaxHead)}
		}
		if bytes.Equal(line, []byte("\r\n")) || bytes.Equal(line, []byte("\n")) {
			if len(h) == len(line) {
				// An empty line before a status line: not an answer's start.
				return h, &FramingError{What: "an empty line where a status line was due"}
			}
			return h, nil
		}
	}
}

func (r *Response) parseHead(h []byte) error {
	lines := strings.Split(strings.TrimRight(string(h), "\r\n"), "\n")
	status := strings.TrimSuffix(lines[0], "\r")
	proto, rest, _ := strings.Cut(status, " ")
	code, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || len(proto) != 8 || len(code) != 3 || err != nil {
		return &FramingError{What: fmt.Sprintf("not a status line: %q", clip([]byte(status)))}
	}
	r.Proto, r.Status, r.Header = proto, n, http.Header{}
	for _, l := range lines[1:] {
		l = strings.TrimSuffix(l, "\r")
		k, v, ok := strings.Cut(l, ":")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return &FramingError{What: fmt.Sprintf("not a header field: %q", clip([]byte(l)))}
		}
		r.Header.Add(k, strings.Trim(v, " \t"))
	}
	return nil
}

// readBody reads the content as RFC 9112 6.3 frames it.
func (c *Conn) readBody(r *Response, head bool) error {
	if cl := r.Header.Values("Content-Length"); len(cl) > 0 {
		if n, err := strconv.ParseInt(strings.TrimSpace(cl[0]), 10, 64); err == nil && n >= 0 {
			r.Length = n
		}
	}
	te := strings.ToLower(r.TransferEncoding())
	switch {
	case head || r.Status/100 == 1 || r.Status == 204 || r.Status == 304:
		r.Framing = NoContent
		return nil
	case te != "":
		if !strings.HasSuffix(strings.TrimSpace(te), "chunked") {
			r.Framing = UntilClose
			return c.untilClose(r)
		}
		r.Framing = Chunked
		return c.chunked(r)
	case r.Length >= 0:
		r.Framing = ContentLength
		if r.Length > MaxBody {
			return &FramingError{What: fmt.Sprintf("a Content-Length of %d is more than the %d bytes read of an answer", r.Length, MaxBody)}
		}
		r.Body = make([]byte, r.Length)
		n, err := io.ReadFull(c.r, r.Body)
		r.Body = r.Body[:n]
		if err != nil {
			if e := c.readErr(err); e != ErrClosed {
				return fmt.Errorf("after %d of %d bytes of content: %w", n, r.Length, e)
			}
			return &ShortError{Framing: ContentLength, Want: r.Length, Got: int64(n)}
		}
		return nil
	case len(r.Header.Values("Content-Length")) > 0:
		return &FramingError{What: fmt.Sprintf("a Content-Length that is no length: %q", r.Header.Get("Content-Length"))}
	}
	r.Framing = UntilClose
	return c.untilClose(r)
}

func (c *Conn) untilClose(r *Response) error {
	b, err := c.rest()
	r.Body = b
	if err != nil {
		return fmt.Errorf("content framed by the connection's close: %w", err)
	}
	return nil
}

// chunked reads chunked content (RFC 9112 7.1) and its trailer section.
func (c *Conn) chunked(r *Response) error {
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			if e := c.readErr(err); e != ErrClosed {
				return e
			}
			return &ShortError{Framing: Chunked, Got: int64(len(r.Body))}
		}
		size, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return &FramingError{What: fmt.Sprintf("not a chunk size: %q", clip([]byte(line)))}
		}
		if int64(len(r.Body))+n > MaxBody {
			return &FramingError{What: fmt.Sprintf("chunked content longer than %d bytes", MaxBody)}
		}
		if n == 0 {
			// The trailer section, up to its empty line.
			for {
				t, err := c.r.ReadString('\n')
				if err != nil {
					if e := c.readErr(err); e != ErrClosed {
						return e
					}
					return &ShortError{Framing: Chunked, Got: int64(len(r.Body))}
				}
				if t == "\r\n" || t == "\n" {
					return nil
				}
			}
		}
		chunk := make([]byte, n+2)
		got, err := io.ReadFull(c.r, chunk)
		if err != nil {
			r.Body = append(r.Body, chunk[:min(int64(got), n)]...)
			if e := c.readErr(err); e != ErrClosed {
				return e
			}
			return &ShortError{Framing: Chunked, Got: int64(len(r.Body))}
		}
		if !bytes.HasSuffix(chunk, []byte("\r\n")) {
			return &FramingError{What: "a chunk not followed by CRLF where its size says it ends"}
		}
		r.Body = append(r.Body, chunk[:n]...)
	}
}

// clip shortens what is quoted of a target's bytes in a message.
func clip(b []byte) []byte {
	if len(b) > 120 {
		return append(b[:120:120], "…"...)
	}
	return b
}
