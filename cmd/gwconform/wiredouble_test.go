package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The transport doubles: HTTP spoken by a server of their own over TCP,
// in front of a simulator's handler, each with one bug of HTTP's own rules
// (RFC 9110, RFC 9112). net/http's server frames every answer right, so no
// http.Handler deviation can carry these: the double reads each request
// with net/http's parser and writes each answer's bytes itself.

// wireBug is the one transport bug of a double (wireFaithful: none; the
// zero value is no transport double at all).
type wireBug int

const (
	wireFaithful wireBug = iota + 1
	// wireChunkedTo10 answers an HTTP/1.0 request with chunked content.
	wireChunkedTo10
	// wireReorder answers requests that came together last first.
	wireReorder
	// wireExpect417 answers Expect: 100-continue with 417.
	wireExpect417
	// wireLengthOff announces one byte less content than it sends (one
	// more would hold every client of the run's other checks until its
	// timeout, the last byte never coming).
	wireLengthOff
	// wireKeepOnClose keeps the connection after Connection: close.
	wireKeepOnClose
	// wireHeadContent sends content in the answer to HEAD.
	wireHeadContent
	// wireRefuseChunked answers a chunked request body 501.
	wireRefuseChunked

	// What a faithful service may do (CONTRACT preamble), each a double
	// that HTTP's own rules must never fail.
	//
	// wireClosesAlways closes the connection after every answer.
	wireClosesAlways
	// wireAnswers10In10 answers an HTTP/1.0 request in HTTP/1.0, its
	// content delimited by the connection's close.
	wireAnswers10In10
	// wireRateLimits answers every fifth request of the interface 429
	// with Retry-After.
	wireRateLimits
	// wireFar waits 40 ms before each answer.
	wireFar
)

// wireServer is a transport double listening on loopback.
type wireServer struct {
	l   net.Listener
	h   http.Handler
	bug wireBug
	wg  sync.WaitGroup
	// n counts the interface's requests (wireRateLimits).
	n atomic.Int64
}

func startWireServer(h http.Handler, bug wireBug) (*wireServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &wireServer{l: l, h: h, bug: bug}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s, nil
}

func (s *wireServer) URL() string { return "http://" + s.l.Addr().String() }

func (s *wireServer) Close() error {
	err := s.l.Close()
	s.wg.Wait()
	return err
}

// pending is a request read and its content.
type pending struct {
	r    *http.Request
	body []byte
}

func (s *wireServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		batch, closing, ok := s.read(c, br)
		if !ok {
			return
		}
		if len(batch) > 1 {
			slices.Reverse(batch) // only wireReorder reads several
		}
		var out bytes.Buffer
		for _, p := range batch {
			s.answer(&out, p)
		}
		if _, err := c.Write(out.Bytes()); err != nil || closing {
			// Half-close first, so that a request still unread does
			// not turn the close into a reset that loses the answer.
			if tc, ok := c.(*net.TCPConn); ok {
				tc.CloseWrite()
				io.Copy(io.Discard, io.LimitReader(br, 1<<20))
			}
			return
		}
	}
}

// read reads the next request and, for wireReorder, every request that
// came with it; closing says the connection ends after their answers.
func (s *wireServer) read(c net.Conn, br *bufio.Reader) (batch []pending, closing, ok bool) {
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return batch, closing, len(batch) > 0
		}
		bug := s.bugFor(r)
		if strings.EqualFold(r.Header.Get("Expect"), "100-continue") && r.ProtoAtLeast(1, 1) {
			if bug == wireExpect417 {
				writeWireAnswer(c, r, http.StatusExpectationFailed, "application/json",
					[]byte(`{"status":"error","error":{"code":"bad_request","message":"expectation failed"}}`), true, bug)
				return nil, true, false
			}
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		if len(r.TransferEncoding) > 0 && bug == wireRefuseChunked {
			writeWireAnswer(c, r, http.StatusNotImplemented, "application/json",
				[]byte(`{"status":"error","error":{"code":"bad_request","message":"chunked bodies are not supported"}}`), true, bug)
			return nil, true, false
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return batch, true, len(batch) > 0
		}
		batch = append(batch, pending{r, body})
		if r.Close && bug != wireKeepOnClose || bug == wireClosesAlways {
			closing = true
		}
		if bug != wireReorder || closing || br.Buffered() == 0 {
			return batch, closing, true
		}
	}
}

// answer writes the handler's answer to p.
func (s *wireServer) answer(out *bytes.Buffer, p pending) {
	p.r.Body = io.NopCloser(bytes.NewReader(p.body))
	p.r.RemoteAddr = "127.0.0.1:1"
	p.r.RequestURI = p.r.URL.RequestURI()
	bug := s.bugFor(p.r)
	rec := httptest.NewRecorder()
	switch {
	case bug == wireRateLimits && s.n.Add(1)%5 == 0:
		rec.Header().Set("Content-Type", "application/json")
		rec.Header().Set("Retry-After", "0")
		rec.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(rec, `{"status":"error","error":{"code":"rate_limited","message":"slow down"}}`)
	case bug == wireFar:
		time.Sleep(40 * time.Millisecond)
		fallthrough
	default:
		s.h.ServeHTTP(rec, p.r)
	}
	res := rec.Result()
	body := rec.Body.Bytes()
	var hdr bytes.Buffer
	for k, vs := range res.Header {
		if k == "Content-Length" || k == "Transfer-Encoding" || k == "Connection" {
			continue
		}
		for _, v := range vs {
			fmt.Fprintf(&hdr, "%s: %s\r\n", k, v)
		}
	}
	closing := p.r.Close && bug != wireKeepOnClose || bug == wireClosesAlways
	writeFramed(out, p.r, res.StatusCode, hdr.Bytes(), body, closing, bug)
}

// bugFor is the double's bug for r: the interface's paths carry it; the
// simulator's admin API, the run's observer, stands for a service's own
// and is answered right.
func (s *wireServer) bugFor(r *http.Request) wireBug {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		return wireFaithful
	}
	return s.bug
}

func writeWireAnswer(w io.Writer, r *http.Request, status int, ct string, body []byte, closing bool, bug wireBug) {
	var out bytes.Buffer
	writeFramed(&out, r, status, []byte("Content-Type: "+ct+"\r\n"), body, closing, bug)
	w.Write(out.Bytes())
}

// writeFramed writes one answer: in HTTP/1.1, its content delimited by
// Content-Length, unless the double's bug frames it otherwise.
func writeFramed(out *bytes.Buffer, r *http.Request, status int, hdr, body []byte, closing bool, bug wireBug) {
	fmt.Fprintf(out, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	out.Write(hdr)
	if closing {
		out.WriteString("Connection: close\r\n")
	}
	head := r.Method == http.MethodHead
	if bug == wireAnswers10In10 && !r.ProtoAtLeast(1, 1) {
		// HTTP/1.0's own framing: the content ends with the connection.
		out.Bytes()[len("HTTP/1.")] = '0'
		out.WriteString("\r\n")
		if !head {
			out.Write(body)
		}
		return
	}
	if bug == wireChunkedTo10 && !r.ProtoAtLeast(1, 1) {
		out.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		fmt.Fprintf(out, "%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		return
	}
	n := len(body)
	if bug == wireLengthOff && n > 0 && !head {
		n--
	}
	out.WriteString("Content-Length: " + strconv.Itoa(n) + "\r\n\r\n")
	if !head || bug == wireHeadContent {
		out.Write(body)
	}
}

// wireDeviations are the transport doubles of deviations.yaml, by ID.
var wireDeviations = map[string]wireBug{
	"answers-http10-chunked":    wireChunkedTo10,
	"answers-pipelined-reorder": wireReorder,
	"answers-expect-417":        wireExpect417,
	"answers-length-off-by-one": wireLengthOff,
	"ignores-connection-close":  wireKeepOnClose,
	"answers-head-with-content": wireHeadContent,
	"refuses-chunked-request":   wireRefuseChunked,
}

func init() {
	for id, bug := range wireDeviations {
		deviations[id] = deviation{wire: bug}
	}
	// The raw doubles with no bug, for TestWireDoubles' own controls.
	for id, bug := range wireFaithfulDoubles {
		deviations[id] = deviation{wire: bug}
	}
}

// wireFaithfulDoubles are the raw doubles with no bug, each taking one of
// a faithful service's latitudes (not deviations of deviations.yaml:
// TestMutationScore leaves them out).
var wireFaithfulDoubles = map[string]wireBug{
	wireFaithfulID:             wireFaithful,
	"wire-faithful-closes":     wireClosesAlways,
	"wire-faithful-http10":     wireAnswers10In10,
	"wire-faithful-rate-limit": wireRateLimits,
	"wire-faithful-far":        wireFar,
}

const wireFaithfulID = "wire-faithful"

// TestWireDoubles: HTTP's own rules (label http) against each transport
// double: the faithful raw double, gwsim and the independent
// implementation pass every check of the family, and so do the doubles
// that take a faithful service's latitudes; each double with a bug fails
// the checks of its rule, at MUST, and no other. In make test (-short):
// gwsim, the faithful raw double and the reordering one; the rest in make
// test-heavy (TestMutationScore runs every bug's double through the whole
// suite there too).
func TestWireDoubles(t *testing.T) {
	if testing.Short() {
		// Beside the other short tests; its suite-level cases (make
		// test-heavy) keep to their place in the order.
		t.Parallel()
	}
	light := map[string]bool{"gwsim": true, "faithful raw double": true, "answers-pipelined-reorder": true}
	// The other cases are suite-level: skipped under -short as
	// simtest.Heavy skips a whole test.
	heavy := func(t *testing.T, name string) {
		if !light[name] && testing.Short() {
			t.Skip("suite-level case: make test-heavy runs it")
		}
	}
	run := func(t *testing.T, env []string, args ...string) indepDoc {
		t.Helper()
		r := runGwconform(t, bins.gwconform, env, append([]string{"--ginkgo.label-filter=http", "--skip-preflight"}, args...)...)
		d := readIndepDoc(t, r.dir)
		n := 0
		for _, res := range d.Results {
			if strings.HasPrefix(res.ID, "http.") {
				n++
			}
		}
		if n != 15 {
			t.Fatalf("%d checks of HTTP's own rules ran, want 15 (exit %d)\n%s", n, r.code, tail(r.stdout+r.stderr))
		}
		return d
	}
	passesAll := func(t *testing.T, d indepDoc) {
		t.Helper()
		for _, res := range d.Results {
			if strings.HasPrefix(res.ID, "http.") && res.Outcome != "passed" {
				t.Errorf("%s: %s %s %s", res.ID, res.Outcome, res.Reason, res.Failure)
			}
		}
	}
	t.Run("gwsim", func(t *testing.T) { passesAll(t, run(t, nil)) })
	t.Run("independent", func(t *testing.T) {
		heavy(t, "independent")
		api, reads := newIndepTarget(indepDeviation{}).serve(t)
		passesAll(t, run(t, nil, "--target", api, "--observer", reads, "--fleet", indepFleetFile(t, indepKey, indepSecret)))
	})
	self := func(t *testing.T, id string) indepDoc {
		t.Helper()
		// The test binary started again as gwconform, its embedded
		// simulator behind the double (runDeviation).
		r := runGwconform(t, os.Args[0], []string{deviationEnv + "=" + id}, "--ginkgo.label-filter=http", "--skip-preflight")
		return readIndepDoc(t, r.dir)
	}
	t.Run("faithful raw double", func(t *testing.T) { passesAll(t, self(t, wireFaithfulID)) })
	// A faithful service's latitudes: never failed; a service that closes
	// after every answer cannot show its pipelining, which is then
	// inconclusive.
	for _, id := range []string{"wire-faithful-closes", "wire-faithful-http10", "wire-faithful-rate-limit", "wire-faithful-far"} {
		t.Run(id, func(t *testing.T) {
			heavy(t, id)
			d := self(t, id)
			for _, res := range d.Results {
				if !strings.HasPrefix(res.ID, "http.") || res.Outcome == "passed" {
					continue
				}
				if res.Outcome == "inconclusive" && id == "wire-faithful-closes" && strings.HasPrefix(res.ID, "http.pipelined.") {
					continue
				}
				t.Errorf("%s: %s %s %s", res.ID, res.Outcome, res.Reason, res.Failure)
			}
		})
	}
	caught := map[string][]string{
		"answers-http10-chunked":    {"http.http10.json", "http.http10.xml"},
		"answers-pipelined-reorder": {"http.pipelined.json", "http.pipelined.xml"},
		"answers-expect-417":        {"http.expect-continue.json", "http.expect-continue.xml"},
		"answers-length-off-by-one": {"http.content-length.json", "http.content-length.xml"},
		"ignores-connection-close":  {"http.connection-close.json", "http.connection-close.xml"},
		"answers-head-with-content": {"http.head.command", "http.head.message", "http.head.update_name"},
		"refuses-chunked-request":   {"http.chunked-request.json", "http.chunked-request.xml"},
	}
	for id := range wireDeviations {
		t.Run(id, func(t *testing.T) {
			heavy(t, id)
			start := time.Now()
			d := self(t, id)
			var failed []string
			for _, res := range d.Results {
				if res.Outcome == "failed" {
					failed = append(failed, res.ID)
					if res.Level != "MUST" {
						t.Errorf("%s failed at %s", res.ID, res.Level)
					}
				}
			}
			slices.Sort(failed)
			want := slices.Clone(caught[id])
			slices.Sort(want)
			if !slices.Equal(failed, want) {
				t.Errorf("failed %v, want %v", failed, want)
			}
			t.Logf("%s: caught by %v in %s", id, failed, time.Since(start).Round(time.Millisecond))
		})
	}
}
