package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// rawSender speaks HTTP/1.1 over one kept-alive connection itself, the way
// wrk does: the whole request (head and body) is one write from a buffer
// it keeps, and the answer is read in the worker's own goroutine from a
// buffered reader it keeps, so a request allocates nothing. Go's
// http.Transport runs two goroutines per connection and hands every
// request and answer between them, which on a fast target costs more than
// the target's own work; bench_test.go measures the senders. On Linux the
// socket is read and written with raw system calls (wire_linux.go). It
// serves plain http:// targets; https:// and proxied ones go through
// net/http (leanSender).
type rawSender struct {
	addr    string // host:port to dial
	timeout time.Duration
	heads   map[device.Operation]map[device.Format][]byte // request line and headers up to Content-Length
	conn    io.ReadWriteCloser
	br      *bufio.Reader
	body    []byte
	out     []byte
	resp    []byte
	ct      []byte // Content-Type of the last answer
	// reused tells whether conn already carried a request: a failure
	// before any answer on such a connection (the server closed it while
	// idle) is retried once on a new one, as net/http does.
	reused bool
	// probe: before a request goes on a kept-alive connection, look
	// (without waiting) whether the server has closed it meanwhile, and
	// if so send on a new one: a request written to a connection the
	// server had already closed was never received, and must not be
	// logged as one that may have been applied. Only with an ack log: it
	// costs a system call per request.
	probe bool
}

func newRawSender(base *url.URL, timeout time.Duration) *rawSender {
	host := base.Host
	addr := host
	if base.Port() == "" {
		addr = net.JoinHostPort(base.Hostname(), "80")
	}
	s := &rawSender{addr: addr, timeout: timeout, heads: map[device.Operation]map[device.Format][]byte{}}
	for _, op := range device.Operations {
		s.heads[op] = map[device.Format][]byte{}
		for _, f := range []device.Format{device.JSON, device.XML} {
			ct := "application/json"
			if f == device.XML {
				ct = "application/xml"
			}
			path := strings.TrimSuffix(base.EscapedPath(), "/") + op.Path()
			s.heads[op][f] = []byte("POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + UserAgent +
				"\r\nContent-Type: " + ct + "\r\nContent-Length: ")
		}
	}
	return s
}

func (s *rawSender) send(ctx context.Context, r *request) answer {
	var err error
	if s.body, err = codec.AppendRequest(s.body[:0], r.format, r.fields); err != nil {
		return answer{err: err}
	}
	out := append(s.out[:0], s.heads[r.op][r.format]...)
	out = strconv.AppendInt(out, int64(len(s.body)), 10)
	out = append(out, "\r\n\r\n"...)
	s.out = append(out, s.body...)
	if ctx.Err() != nil {
		return answer{err: ctx.Err()}
	}
	a, retry := s.exchange()
	if retry {
		first := a
		a, _ = s.exchange()
		if first.sent && a.err != nil && !a.sent {
			// The first try may have been applied; the retry, never sent,
			// was not: the answer is the first try's.
			a.err, a.sent = &retryError{first: first.err, retry: a.err}, true
		}
	}
	return a
}

// retryError is a request that got no answer on a kept-alive connection
// and whose retry on a new one could not be sent.
type retryError struct{ first, retry error }

func (e *retryError) Error() string {
	return describeErr(e.first) + ", then the retry: " + describeErr(e.retry)
}

func (e *retryError) Unwrap() error { return e.first }

// exchange sends s.out and reads one answer; retry says the connection
// was a kept-alive one that turned out closed before answering.
func (s *rawSender) exchange() (a answer, retry bool) {
	if s.conn == nil {
		c, err := dialWire(s.addr, s.timeout)
		if err != nil {
			return answer{err: err}, false // not sent
		}
		s.conn, s.reused = c, false
		if s.br == nil {
			s.br = bufio.NewReaderSize(c, 4096)
		} else {
			s.br.Reset(c)
		}
	}
	if s.reused && s.probe && s.closedByPeer() {
		s.drop()
		return s.exchange()
	}
	reused := s.reused
	s.reused = true
	if n, err := s.conn.Write(s.out); err != nil {
		s.drop()
		// Nothing written is nothing sent.
		return answer{err: err, sent: n > 0}, reused
	}
	status, closeAfter, err := s.readAnswer()
	if err != nil {
		s.drop()
		// Nothing at all came back on a reused connection: the server
		// closed it while idle, and the request was not processed; or the
		// server died with it in flight (then it may have been applied,
		// and the retry finds the server gone).
		return answer{err: err, sent: true}, reused && errors.Is(err, errNoAnswer)
	}
	if closeAfter {
		s.drop()
	}
	if status == 200 && (bytes.Equal(s.resp, successJSON) || bytes.Equal(s.resp, successXML)) {
		return answer{status: status, ok: true}, false
	}
	return judge(status, string(s.ct), s.resp), false
}

func (s *rawSender) close() { s.drop() }

// closedByPeer looks, without waiting, whether the idle connection was
// closed by the server, or carries bytes nobody asked for (after which
// it is no use either).
func (s *rawSender) closedByPeer() bool {
	if s.br.Buffered() > 0 {
		return true
	}
	c, ok := s.conn.(interface{ closedByPeer() bool })
	return ok && c.closedByPeer()
}

func (s *rawSender) drop() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

var errNoAnswer = errors.New("connection closed before any answer")

// readAnswer reads one HTTP/1.1 answer into s.resp (at most maxAnswer
// bytes of body; the rest is read and dropped).
func (s *rawSender) readAnswer() (status int, closeAfter bool, err error) {
	for {
		line, err := s.line()
		if err != nil {
			// A reset is a close too: a server that closes with the
			// request unread in its socket resets the connection instead.
			if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
				return 0, false, errNoAnswer
			}
			return 0, false, err
		}
		// HTTP/1.x 200 Reason
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return 0, false, fmt.Errorf("not an HTTP/1.x status line: %q", cut(line))
		}
		status, err = strconv.Atoi(string(line[9:12]))
		if err != nil {
			return 0, false, fmt.Errorf("bad status line: %q", cut(line))
		}
		closeAfter = line[7] == '0' // HTTP/1.0 closes unless told otherwise
		length, chunked := -1, false
		s.ct = s.ct[:0]
		for {
			h, err := s.line()
			if err != nil {
				return 0, false, unexpected(err)
			}
			if len(h) == 0 {
				break
			}
			name, value, ok := bytes.Cut(h, []byte(":"))
			if !ok {
				return 0, false, fmt.Errorf("bad header line: %q", cut(h))
			}
			value = bytes.TrimSpace(value)
			switch {
			case asciiEqualFold(name, "Content-Length"):
				if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
					return 0, false, fmt.Errorf("bad Content-Length: %q", cut(value))
				}
			case asciiEqualFold(name, "Transfer-Encoding"):
				chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
			case asciiEqualFold(name, "Connection"):
				v := bytes.ToLower(value)
				if bytes.Contains(v, []byte("close")) {
					closeAfter = true
				} else if bytes.Contains(v, []byte("keep-alive")) {
					closeAfter = false
				}
			case asciiEqualFold(name, "Content-Type"):
				s.ct = append(s.ct[:0], value...)
			}
		}
		if status >= 100 && status < 200 {
			continue // an interim answer; the real one follows
		}
		s.resp = s.resp[:0]
		switch {
		case status == 204 || status == 304:
		case chunked:
			err = s.readChunked()
		case length >= 0:
			err = s.readBody(int64(length))
		default: // until the connection closes
			closeAfter = true
			err = s.readBody(-1)
		}
		return status, closeAfter, unexpected(err)
	}
}

// line reads one header line without its CRLF; it is valid until the
// next read.
func (s *rawSender) line() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errors.New("header line longer than 4 KB")
	}
	if err != nil {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// readBody reads n bytes (until EOF when n < 0), keeping the first
// maxAnswer.
func (s *rawSender) readBody(n int64) error {
	var r io.Reader = s.br
	if n >= 0 {
		r = io.LimitReader(s.br, n)
	}
	var err error
	s.resp, err = readUpTo(s.resp, r, maxAnswer)
	if err != nil {
		return err
	}
	rest, err := io.Copy(io.Discard, r)
	if n >= 0 && int64(len(s.resp))+rest < n && err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func (s *rawSender) readChunked() error {
	for {
		line, err := s.line()
		if err != nil {
			return err
		}
		sizeText, _, _ := bytes.Cut(line, []byte(";"))
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeText)), 16, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("bad chunk size: %q", cut(line))
		}
		if size == 0 {
			for { // trailers, up to the empty line
				t, err := s.line()
				if err != nil || len(t) == 0 {
					return err
				}
			}
		}
		keep := min(size, int64(maxAnswer-len(s.resp)))
		lr := io.LimitReader(s.br, size)
		s.resp, err = readUpTo(s.resp, lr, len(s.resp)+int(max(keep, 0)))
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, lr); err != nil {
			return err
		}
		if crlf, err := s.line(); err != nil || len(crlf) != 0 {
			return errors.New("chunk not followed by CRLF")
		}
	}
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

func cut(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}
