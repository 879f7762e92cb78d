package load

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// answer is what came back for one request.
type answer struct {
	status int    // 0 when no complete answer came
	code   string // the error code of a rejection, where the body has one
	ok     bool   // 200 with status success
	err    error  // why no complete answer came
	// sent: with err, the request was (or may have been) written to the
	// target, which may have applied it; false when it surely was not
	// (the connection could not be made).
	sent bool
}

// noAnswer is the answer of a request that got no complete answer; a
// failed dial means it was not sent.
func noAnswer(err error) answer {
	var oe *net.OpError
	return answer{err: err, sent: !(errors.As(err, &oe) && oe.Op == "dial")}
}

// sender sends one drawn request. Each worker has its own, so a sender
// may keep buffers between calls.
type sender interface {
	send(ctx context.Context, r *request) answer
}

// maxAnswer bounds the part of an answer that is read; the rest is
// discarded unread by closing the connection's body.
const maxAnswer = 64 << 10

// leanSender sends through net/http's transport, for https:// and proxied
// targets (the raw sender speaks plain HTTP/1.1 only): bodies encoded into
// a buffer it keeps, a request made by copying a template per operation,
// no redirect handling, answers read into a buffer it keeps. It is still
// some three times the raw sender's cost per request, and conformance/
// client, which records every exchange for reports, more again;
// bench_test.go measures the three.
type leanSender struct {
	rt http.RoundTripper
	// templates are a request per operation, made once with the run's
	// context; each request is a shallow copy with its own body.
	templates map[device.Operation]*http.Request
	headers   map[device.Format]http.Header // shared, never written
	scratch   []byte
	resp      []byte
}

func newLeanSender(ctx context.Context, rt http.RoundTripper, base *url.URL, headers map[device.Format]http.Header) (*leanSender, error) {
	s := &leanSender{rt: rt, templates: map[device.Operation]*http.Request{}, headers: headers, resp: make([]byte, 0, 512)}
	for _, op := range device.Operations {
		u := *base
		u.Path = strings.TrimSuffix(base.Path, "/") + op.Path()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
		if err != nil {
			return nil, err
		}
		s.templates[op] = req
	}
	return s, nil
}

func formatHeaders() map[device.Format]http.Header {
	return map[device.Format]http.Header{
		device.JSON: {"Content-Type": {"application/json"}, "User-Agent": {UserAgent}},
		device.XML:  {"Content-Type": {"application/xml"}, "User-Agent": {UserAgent}},
	}
}

// UserAgent names the load generator to targets.
const UserAgent = "gwconform-load/1"

func (s *leanSender) send(ctx context.Context, r *request) answer {
	var err error
	if s.scratch, err = codec.AppendRequest(s.scratch[:0], r.format, r.fields); err != nil {
		return answer{err: err}
	}
	// The transport may still hold the body after the answer came, so each
	// request gets its own copy; the encoding itself reuses the scratch.
	body := bytes.Clone(s.scratch)
	req := new(http.Request)
	*req = *s.templates[r.op]
	req.Header = s.headers[r.format]
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := s.rt.RoundTrip(req)
	if err != nil {
		return noAnswer(err)
	}
	defer resp.Body.Close()
	s.resp, err = readUpTo(s.resp[:0], resp.Body, maxAnswer)
	if err != nil {
		return answer{err: err, sent: true}
	}
	return judge(resp.StatusCode, resp.Header.Get("Content-Type"), s.resp)
}

// readUpTo appends at most limit bytes of r to b.
func readUpTo(b []byte, r io.Reader, limit int) ([]byte, error) {
	for len(b) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):min(cap(b), limit)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// successJSON and successXML are the bodies of CONTRACT 4 (gwsim's own),
// compared byte for byte before anything is parsed.
var (
	successJSON = codec.Success(device.JSON)
	successXML  = codec.Success(device.XML)
)

// judge reads an answer: success is 200 with a body whose status is
// success, in JSON or XML; anything else is a rejection, whose error code
// is taken from the body where it has one.
func judge(status int, contentType string, body []byte) answer {
	a := answer{status: status}
	if status == http.StatusOK && (bytes.Equal(body, successJSON) || bytes.Equal(body, successXML)) {
		a.ok = true
		return a
	}
	st, code := readStatus(contentType, body)
	a.ok = status == http.StatusOK && st == "success"
	a.code = code
	return a
}

// readStatus is the body's status and error code, read by the one reader
// of answer bodies every client shares (client.ParseAnswer).
func readStatus(contentType string, body []byte) (status, code string) {
	a := client.ParseAnswer(contentType, body)
	return a.Status, a.ErrorCode
}

// clientSender sends through conformance/client, as the conformance checks
// do: exactly the same bodies, with every exchange recorded.
type clientSender struct {
	c      *client.Client
	fields []client.Field
}

func (s *clientSender) send(ctx context.Context, r *request) answer {
	s.fields = s.fields[:0]
	for _, f := range r.fields {
		s.fields = append(s.fields, client.Field{Key: f.Key, Value: f.Value})
	}
	resp, _, err := s.c.Do(ctx, client.Request{Path: r.op.Path(), Format: r.format, Fields: s.fields, Sign: client.SignKeep})
	if err != nil {
		return noAnswer(err)
	}
	return answer{status: resp.Status, code: resp.ErrorCode, ok: resp.Status == http.StatusOK && resp.StatusField == "success"}
}

// newTransport is the load generator's transport: one idle connection kept
// per worker, no compression, proxies from the environment as for the
// harness (loopback never goes through one).
func newTransport(workers int, timeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   min(timeout, 10*time.Second),
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
		MaxIdleConns:          workers + 8,
		MaxIdleConnsPerHost:   workers + 8,
		IdleConnTimeout:       90 * time.Second,
	}
}

// describeErr is a short, stable description of why no answer came, for
// counting failures by kind.
func describeErr(err error) string {
	var ne net.Error
	var re *retryError
	switch {
	case errors.As(err, &re):
		return re.Error()
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "connection closed"
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Op + " " + oe.Err.Error()
	}
	s := err.Error()
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}
