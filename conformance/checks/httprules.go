package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/internal/wire"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// HTTP's own rules. The published interface is "an HTTP interface"
// (gateway-api.md 1): every client library a caller uses relies on the
// sentences of RFC 9110 and RFC 9112 below, so a service that breaks one
// breaks its callers whatever the two texts say. Each check writes its
// requests byte by byte (package wire), quotes the RFC's sentence, and
// takes the RFC's keyword as its level.
//
// Each is fair to a faithful service: it may answer an HTTP/1.0 request in
// HTTP/1.0, close the connection after any answer (a check then sends again
// on a new connection, or is inconclusive, never failed), be far (every wait
// is the run's --timeout), and rate-limit with 429 or 503 and Retry-After
// (waited out, then sent again as a new request). Every request that must
// succeed is a valid, signed message to the tested gateway with a value of
// its own, so that no request of the run is ever a replay of another.

// Sentences of RFC 9110 and RFC 9112, each quoted by its checks.
const (
	QuoteRFCTransferEncoding = "A server MUST NOT send a response containing Transfer-Encoding unless the corresponding request indicates HTTP/1.1 (or later minor revisions)."
	QuoteRFCPipelining       = "A server MAY process a sequence of pipelined requests in parallel if they all have safe methods (Section 9.2.1 of [HTTP]), but it MUST send the corresponding responses in the same order that the requests were received."
	QuoteRFCExpect           = "Upon receiving an HTTP/1.1 (or later) request that has a method, target URI, and complete header section that contains a 100-continue expectation and an indication that request content will follow, an origin server MUST send either: an immediate response with a final status code, if that status can be determined by examining just the method, target URI, and header fields, or an immediate 100 (Continue) response to encourage the client to send the request content."
	QuoteRFCChunked          = "A recipient MUST be able to parse and decode the chunked transfer coding."
	QuoteRFCClose            = "A server that receives a \"close\" connection option MUST initiate closure of the connection (see below) after it sends the final response to the request that contained the \"close\" connection option."
	QuoteRFCContentLength    = "When transferring a representation as content, Content-Length refers specifically to the amount of data enclosed so that it can be used to delimit framing (e.g., Section 6.2 of [HTTP/1.1])."
	QuoteRFCHead             = "The HEAD method is identical to GET except that the server MUST NOT send content in the response."
	// Sentences a check's failure also quotes when it is the one broken.
	QuoteRFCNoFurther        = "The server MUST NOT process any further requests received on that connection."
	QuoteRFCLengthWithCoding = "A sender MUST NOT send a Content-Length header field in any message that contains a Transfer-Encoding header field."
	QuoteRFCLengthRequired   = "A server MAY reject a request that contains a message body but not a Content-Length by responding with 411 (Length Required)."
	QuoteRFC417              = "A server that receives an Expect field value containing a member other than 100-continue MAY respond with a 417 (Expectation Failed) status code to indicate that the unexpected expectation cannot be met."
)

// rfcSources are where the family's sentences are written.
var rfcSources = map[string]string{
	QuoteRFCTransferEncoding: "RFC 9112 6.1",
	QuoteRFCPipelining:       "RFC 9112 9.3.2",
	QuoteRFCExpect:           "RFC 9110 10.1.1",
	QuoteRFCChunked:          "RFC 9112 7.1",
	QuoteRFCClose:            "RFC 9112 9.6",
	QuoteRFCContentLength:    "RFC 9110 8.6",
	QuoteRFCHead:             "RFC 9110 9.3.2",
}

// QuoteSource names where a check's quote is written: the RFC and its
// section for HTTP's own rules, else "published" or "CONTRACT"
// (oracle.Texts).
func QuoteSource(quote string) string {
	if src, ok := rfcSources[quote]; ok {
		return src
	}
	return oracle.Texts(quote)
}

// InferHTTP is the step from the published interface to HTTP's own rules:
// a MUST of the RFCs is a MUST of the interface.
const InferHTTP = "the published interface is an HTTP interface (gateway-api.md 1): what HTTP requires of every server, it requires of the service"

// httpRule is one check of the family, in each format (both when formats is
// nil) or, for a check whose requests carry no body, once.
type httpRule struct {
	id, title, rfc, quote, assertion string
	// once: one check, not one per format (a HEAD carries no body).
	once bool
	op   device.Operation
	run  func(ctx context.Context, w *wireRun)
}

func (env *Suite) httpRules() []httpRule {
	rs := []httpRule{
		{id: "http.http10", rfc: "RFC 9112 6.1", quote: QuoteRFCTransferEncoding, op: device.SendMessage,
			title:     "a valid request in HTTP/1.0",
			assertion: "The answer to a valid request sent in HTTP/1.0 MUST NOT carry Transfer-Encoding (an HTTP/1.0 client cannot read chunked content); it may come in HTTP/1.0 or HTTP/1.1, its content delimited by Content-Length or by the connection's close.",
			run:       env.checkHTTP10},
		{id: "http.pipelined", rfc: "RFC 9112 9.3.2", quote: QuoteRFCPipelining, op: device.SendMessage,
			title:     "four requests pipelined on one connection",
			assertion: "Four requests written at once on one connection (a valid message, a GET, a valid message, a GET) MUST be answered in the order sent: success, refusal, success, refusal. A service that closes the connection after an answer is sent the rest again on a new connection; it is never failed for closing.",
			run:       env.checkPipelined},
		{id: "http.expect-continue", rfc: "RFC 9110 10.1.1", quote: QuoteRFCExpect, op: device.SendMessage,
			title:     "a valid request with Expect: 100-continue",
			assertion: "A valid request whose header section carries Expect: 100-continue (curl sends it with every body over 1 KiB) MUST get a 100 (Continue) before its content is sent, and then succeed; a 417 (Expectation Failed), which the RFC keeps for expectations other than 100-continue, or a refusal before the content is sent, fails it.",
			run:       env.checkExpectContinue},
		{id: "http.chunked-request", rfc: "RFC 9112 7.1", quote: QuoteRFCChunked, op: device.SendMessage,
			title:     "a valid request whose body is chunked",
			assertion: "A valid request whose body is sent with Transfer-Encoding: chunked MUST be read and succeed; a 411 (Length Required), which RFC 9112 6.3 allows, passes with an observation.",
			run:       env.checkChunkedRequest},
		{id: "http.connection-close", rfc: "RFC 9112 9.6", quote: QuoteRFCClose, op: device.SendMessage,
			title:     "a valid request with Connection: close, and a HEAD after it on the same connection",
			assertion: "After answering a request that carries Connection: close, the service MUST close the connection and MUST NOT answer the request written after it.",
			run:       env.checkConnectionClose},
		{id: "http.content-length", rfc: "RFC 9110 8.6", quote: QuoteRFCContentLength, op: device.SendMessage,
			title:     "the Content-Length of the answer to a valid request, another written after it",
			assertion: "An answer's Content-Length MUST be the number of bytes of its content: as many bytes come before the service closes the connection, and the next bytes on it are the next answer's status line; an answer MUST NOT carry both Content-Length and Transfer-Encoding.",
			run:       env.checkContentLength},
	}
	for _, op := range device.Operations {
		op := op
		rs = append(rs, httpRule{id: "http.head." + check.Slug(op.Name()), rfc: QuoteSource(QuoteRFCHead), quote: QuoteRFCHead, op: op, once: true,
			title:     "HEAD to the " + op.Name() + " path",
			assertion: "The answer to HEAD on the " + op.Name() + " path, whatever its status, MUST NOT carry content: the next bytes on the connection after its header section are the next answer's status line, or none when the service closed it.",
			run:       func(ctx context.Context, w *wireRun) { env.checkHead(ctx, w, op) }})
	}
	return rs
}

// HTTP's own rules, first of the run (family).
var _ = declares(100, (*Suite).declareHTTPRules)

// declareHTTPRules declares the family, first of the run. Each check runs
// in its place: it speaks to the target on connections of its own, outside
// the run's batches, and appends to the tested gateway's messages.
func (env *Suite) declareHTTPRules() {
	for _, r := range env.httpRules() {
		r := r
		formats := []device.Format{device.JSON, device.XML}
		if r.once {
			formats = []device.Format{0}
		}
		for _, f := range formats {
			f := f
			id, title := r.id, capital(r.title)
			if f != 0 {
				id += "." + f.String()
				title += " (" + f.String() + ")"
			}
			m := check.Meta{ID: id, Level: check.Must, Section: "1", Title: title,
				Assertion: r.assertion + " The sentence that forbids it (" + r.rfc + "): “" + r.quote + "”; read with it: " + InferHTTP + ".",
				Quote:     r.quote, Inference: InferHTTP, Operation: r.op.Name(), Tags: []string{"http", "transport"},
				Traits: check.Traits{Shared: true, Cost: probeCost}}
			if f != 0 {
				m.Format = f.String()
			}
			for _, rl := range rules.ForCheck(id) {
				m.Tags = append(m.Tags, report.RuleTag+rl.ID)
			}
			env.It(m, func(ctx context.Context) {
				w := env.wireRun(ctx, f)
				r.run(ctx, w)
			})
		}
	}
}

// wireRun is one check's way to the target on connections of its own.
type wireRun struct {
	env  *Suite
	ctx  context.Context
	f    device.Format
	host string
	// timeout bounds every wait: the run's --timeout.
	timeout time.Duration
	// waits counts the answers that asked to wait (again).
	waits int
}

func (env *Suite) wireRun(ctx context.Context, f device.Format) *wireRun {
	t := trial.From(ctx)
	switch {
	case env.MaxRequests > 0:
		t.Skip("--max-requests: the checks of HTTP's own rules send on connections of their own, outside the count")
	case env.Link().Stopped():
		t.Skip("the target stopped answering")
	}
	if f == 0 {
		f = device.JSON
	}
	return &wireRun{env: env, ctx: ctx, f: f, host: env.Client.Base().URL().Host, timeout: env.Client.Timeout()}
}

// target is the request-target of a path on the target (its base path
// included).
func (w *wireRun) target(path string) string {
	u, err := url.Parse(w.env.Client.URL(path))
	if err != nil {
		return path
	}
	return u.RequestURI()
}

func (w *wireRun) contentType() string {
	if w.f == device.XML {
		return "application/xml"
	}
	return "application/json"
}

// message is a valid, signed message to the tested gateway in the check's
// format, its value one of a kind, written when called (its timestamp is
// now).
func (w *wireRun) message() wire.Request {
	env := w.env
	c := env.Base(device.SendMessage, "", "")
	c.Set(device.FieldMessageValue, fmt.Sprintf("http_rules_%d_%d=%d", env.Worker, env.wireSeq.Add(1), env.Seed&0xffff))
	return wire.Request{Path: w.target(device.SendMessage.Path()), Host: w.host,
		Header: [][2]string{{"Content-Type", w.contentType()}, {"User-Agent", client.UserAgent}},
		Body:   catalog.Encoded(&env.Bench, c, w.f)}
}

// bare is a request without content (HEAD, GET) to an operation's path.
func (w *wireRun) bare(method string, op device.Operation) wire.Request {
	return wire.Request{Method: method, Path: w.target(op.Path()), Host: w.host,
		Header: [][2]string{{"User-Agent", client.UserAgent}}}
}

// dial opens a connection of the check's own; a target that cannot be
// reached so (only through a proxy) leaves the check inconclusive.
func (w *wireRun) dial() *wire.Conn {
	trial.Helper()
	if w.env.DryRun {
		trial.From(w.ctx).Skip("dry run: not sent")
	}
	c, err := wire.Dial(w.ctx, w.env.Client.Base().URL(), w.timeout)
	if err != nil {
		w.inconclusive("no connection of its own to the target: " + err.Error())
	}
	return c
}

// inconclusive ends the check unjudged.
func (w *wireRun) inconclusive(why string) {
	trial.Helper()
	why = "inconclusive: " + why
	trial.From(w.ctx).Entry(report.InconclusiveEntry, why, ginkgo.ReportEntryVisibilityNever)
	trial.From(w.ctx).Skip(why)
}

// fail ends the check failed, quoting the sentence broken.
func (w *wireRun) fail(format string, args ...any) {
	trial.Helper()
	trial.From(w.ctx).Fail(fmt.Sprintf(format, args...))
}

// record keeps an exchange in the check's report (api_key masked, no
// sign), with what the wire showed of the answer.
func (w *wireRun) record(q wire.Request, r *wire.Response, err error, took time.Duration) {
	ex := client.Exchange{Method: q.Method, URL: w.env.Client.URL(""), RequestBody: string(q.Body), Duration: took,
		RequestHeaders: map[string]string{}}
	if ex.Method == "" {
		ex.Method = http.MethodPost
	}
	u := w.env.Client.Base().URL()
	u.Path, u.RawPath, u.User = "", "", nil
	ex.URL = u.String() + q.Path
	for _, h := range q.Header {
		ex.RequestHeaders[h[0]] = h[1]
	}
	// What a client library cannot send (the exchange's curl line and
	// gwconform replay send it as an ordinary request) is said beside it.
	switch {
	case q.Proto != "":
		observe(w.ctx, "sent as %s: %s %s %s", q.Proto, ex.Method, q.Path, q.Proto)
	case q.Chunks != nil:
		observe(w.ctx, "sent with Transfer-Encoding: chunked: its %d bytes of content in chunks of %v bytes and the rest, then the last chunk", len(q.Body), q.Chunks)
	}
	if r != nil {
		ex.Status = r.Status
		ex.ResponseHeaders = map[string]string{}
		for k, vs := range r.Header {
			ex.ResponseHeaders[k] = strings.Join(vs, ", ")
		}
		ex.ResponseBody = string(r.Body)
	}
	if err != nil {
		ex.Error = err.Error()
	}
	w.env.Link().Record(w.ctx, ex)
	if r != nil && q.Body != nil && succeeded(r) {
		// An accepted message: the run's later reads of the gateway's
		// messages wait for it to show, as for any message the run sent
		// (a service may show a change some time after its answer).
		w.env.Link().Track(client.Request{Path: device.SendMessage.Path(), Format: w.f, RawBody: q.Body}, answer(r))
	}
}

// exchange writes q on c and reads its answer.
func (w *wireRun) exchange(c *wire.Conn, q wire.Request) (*wire.Response, error) {
	start := time.Now()
	if err := c.Write(q.Bytes()); err != nil {
		w.record(q, nil, err, time.Since(start))
		return nil, err
	}
	r, err := c.ReadResponse(q.Method == http.MethodHead)
	w.record(q, r, err, time.Since(start))
	return r, err
}

// answer is what an answer's content says (CONTRACT 4).
func answer(r *wire.Response) *client.Response {
	if r == nil {
		return nil
	}
	a := client.ParseAnswer(r.Header.Get("Content-Type"), r.Body)
	return &client.Response{Status: r.Status, ContentType: r.Header.Get("Content-Type"), Header: r.Header, Body: r.Body,
		Format: a.Format, StatusField: a.Status, ErrorCode: a.ErrorCode, ErrorField: a.ErrorField, ErrorMessage: a.ErrorMessage, ParseError: a.ParseError}
}

func describe(r *wire.Response) string {
	if r == nil {
		return "no answer"
	}
	s := fmt.Sprintf("HTTP %d", r.Status)
	a := answer(r)
	if a.StatusField != "" {
		s += ", status " + a.StatusField
	}
	if a.ErrorCode != "" {
		s += ", error " + a.ErrorCode
	}
	return s
}

// succeeded is the MUST-level verdict on an answer (link.Accepted).
func succeeded(r *wire.Response) bool {
	a := answer(r)
	return a != nil && a.Status/100 == 2 && a.StatusField == "success"
}

// broken ends a check whose answer did not come whole: one that did not
// end within the run's --timeout fails it, as it fails every check of the
// run; bytes that break HTTP's framing leave it to http.content-length,
// which judges the framing.
func (w *wireRun) broken(what string, err error) {
	trial.Helper()
	if errors.Is(err, wire.ErrTimeout) {
		w.fail("%s: %v", what, err)
	}
	w.inconclusive(what + " cannot be read (its framing is judged by http.content-length): " + err.Error())
}

// unreadable says an answer's content cannot be read as an answer: its
// framing, not the rule a check judges, may be at fault.
func unreadable(r *wire.Response) bool { return answer(r).ParseError != "" }

// wireAttempts is how many times a check sends on a new connection when
// the service closed one before the check could judge; each answer that
// asks to wait (429, 503 with Retry-After) adds one, up to
// client.MaxRetries waits.
const wireAttempts = 3

// again says whether r asks to be sent again, and waits as it asks.
func (w *wireRun) again(r *wire.Response) bool {
	trial.Helper()
	d, ok := client.RetryAfter(answer(r), time.Now())
	if !ok {
		return false
	}
	if w.waits >= client.MaxRetries {
		w.inconclusive(fmt.Sprintf("still asked to wait (%s) after %d waits", describe(r), w.waits))
	}
	w.waits++
	observe(w.ctx, "%s: waited %s as it asked, then sent again", describe(r), d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.ctx.Done():
	}
	return true
}

// slot holds one of the run's places for requests in flight while the
// check's connection is open.
func (w *wireRun) slot() func() { return w.env.Link().Slot() }

// attempts runs a check's attempts one at a time, each on a connection of
// its own, closed after it however it ends, holding one of the run's
// places for requests in flight, until one judges (try gives true):
// wireAttempts of them, and one more for each answer that asked to wait
// (again). try is given how many attempts came before it, those refused
// for a rate not counted. It says whether an attempt judged.
func (w *wireRun) attempts(try func(c *wire.Conn, n int) bool) bool {
	defer w.slot()()
	for attempt := 0; attempt < wireAttempts+w.waits; attempt++ {
		if w.attempt(try, attempt-w.waits) {
			return true
		}
	}
	return false
}

func (w *wireRun) attempt(try func(*wire.Conn, int) bool, n int) bool {
	c := w.dial()
	defer c.Close()
	return try(c, n)
}

func (env *Suite) checkHTTP10(ctx context.Context, w *wireRun) {
	judged := w.attempts(func(c *wire.Conn, _ int) bool {
		q := w.message()
		q.Proto = "HTTP/1.0"
		r, err := w.exchange(c, q)
		c.Close()
		if r != nil && r.TransferEncoding() != "" {
			w.fail("the answer to an HTTP/1.0 request (%s) carries Transfer-Encoding: %s. RFC 9112 6.1: “%s”", describe(r), r.TransferEncoding(), QuoteRFCTransferEncoding)
		}
		switch {
		case errors.Is(err, wire.ErrClosed) && r == nil:
			observe(ctx, "the connection closed with no answer")
			return false
		case err != nil:
			w.broken("the answer to an HTTP/1.0 request", err)
		case w.again(r):
			return false
		}
		observe(ctx, "answered %s (a status line in %s), its content delimited by %s", describe(r), r.Proto, r.Framing)
		return true
	})
	if judged {
		return
	}
	w.inconclusive("no readable answer after " + fmt.Sprint(wireAttempts) + " attempts")
}

func (env *Suite) checkPipelined(ctx context.Context, w *wireRun) {
	const n = 4
	want := []bool{true, false, true, false}
	closedInOrder := 0 // attempts whose connection closed after one answer, in order
	judged := w.attempts(func(c *wire.Conn, _ int) bool {
		qs := make([]wire.Request, n)
		var all []byte
		for i := range qs {
			if want[i] {
				qs[i] = w.message()
			} else {
				qs[i] = w.bare(http.MethodGet, device.SendMessage)
			}
			all = append(all, qs[i].Bytes()...)
		}
		start := time.Now()
		if err := c.Write(all); err != nil {
			c.Close()
			w.record(qs[0], nil, err, time.Since(start))
			return false
		}
		var got []*wire.Response
		var ended error
		for i := 0; i < n; i++ {
			r, err := c.ReadResponse(false)
			if err != nil {
				ended = err
				w.record(qs[i], r, err, time.Since(start))
				break
			}
			w.record(qs[i], r, nil, time.Since(start))
			got = append(got, r)
		}
		c.Close()
		retry := false
		for _, r := range got {
			if _, ok := client.RetryAfter(answer(r), time.Now()); ok {
				retry = w.again(r)
				break
			}
		}
		if retry {
			return false
		}
		switch {
		case errors.Is(ended, wire.ErrTimeout):
			w.fail("%d of %d pipelined requests answered, then %v. RFC 9112 9.3.2: “%s”", len(got), n, ended, QuoteRFCPipelining)
		case ended != nil && !errors.Is(ended, wire.ErrClosed) && len(got) < 2:
			w.inconclusive(fmt.Sprintf("%d of %d pipelined requests answered, then bytes that are no answer (judged by http.content-length): %v", len(got), n, ended))
		}
		var sent, seen []string
		sWant, sGot := 0, 0
		for i, r := range got {
			sent = append(sent, map[bool]string{true: "success", false: "refusal"}[want[i]])
			seen = append(seen, map[bool]string{true: "success", false: "refusal"}[succeeded(r)]+" ("+describe(r)+")")
			if want[i] {
				sWant++
			}
			if succeeded(r) {
				sGot++
			}
		}
		if len(got) < 2 {
			if len(got) == 1 && succeeded(got[0]) == want[0] {
				closedInOrder++
			}
			observe(ctx, "the connection closed after %d answers: sent again on a new connection", len(got))
			return false
		}
		if sWant != sGot {
			w.inconclusive(fmt.Sprintf("the answers are not one success per valid message and one refusal per GET, so their order cannot be told: sent %s; got %s", strings.Join(sent, ", "), strings.Join(seen, ", ")))
		}
		for i, r := range got {
			if succeeded(r) != want[i] {
				w.fail("the pipelined requests were answered out of order: sent %s; got %s. RFC 9112 9.3.2: “%s”", strings.Join(sent, ", "), strings.Join(seen, ", "), QuoteRFCPipelining)
			}
		}
		observe(ctx, "%d of %d pipelined requests answered in order on one connection: %s", len(got), n, strings.Join(seen, ", "))
		return true
	})
	if judged {
		return
	}
	if closedInOrder >= wireAttempts {
		// A service may close the connection after any answer (CONTRACT's
		// preamble; RFC 9112 9.6): what it answered came in the order
		// sent, and the rest is the client's to send again (RFC 9112
		// 9.3.2: "A client that pipelines requests SHOULD retry unanswered
		// requests if the connection closes before it receives all of
		// the corresponding responses").
		observe(ctx, "in %d attempts the service answered the first pipelined request, in order, and closed the connection: the order of what it answered is right", wireAttempts)
		return
	}
	w.inconclusive(fmt.Sprintf("in %d attempts the service never answered two pipelined requests on one connection (it may close after any answer)", wireAttempts))
}

func (env *Suite) checkExpectContinue(ctx context.Context, w *wireRun) {
	judged := w.attempts(func(c *wire.Conn, _ int) bool {
		q := w.message()
		// Connection: close, so that an answer whose framing is broken
		// ends with the close rather than a wait.
		q.Header = append(q.Header, [2]string{"Expect", "100-continue"}, [2]string{"Connection", "close"})
		start := time.Now()
		if err := c.Write(q.Head()); err != nil {
			c.Close()
			w.record(q, nil, err, time.Since(start))
			return false
		}
		// Only the header section is sent: what comes first is the
		// service's choice between a 100 and a final status.
		var first *wire.Response
		var err error
		for {
			first, err = c.ReadInterimOrFinal(false)
			if err == nil && first.Status/100 == 1 && first.Status != 100 && first.Status != 101 {
				continue // 102, 103: read on
			}
			break
		}
		switch {
		case errors.Is(err, wire.ErrTimeout):
			// Send the content anyway, as curl does after a wait, to
			// tell what the service did with the request.
			c.Write(q.Content())
			r, rerr := c.ReadResponse(false)
			c.Close()
			w.record(q, r, rerr, time.Since(start))
			if rerr != nil {
				w.broken("with its content sent after "+w.timeout.String()+" without a 100 (Continue), the answer", rerr)
			}
			w.fail("no 100 (Continue) and no final answer within %s of the header section with Expect: 100-continue (the service waited for the content); with the content sent then: %s. RFC 9110 10.1.1: “%s”", w.timeout, describe(r), QuoteRFCExpect)
		case errors.Is(err, wire.ErrClosed):
			c.Close()
			w.record(q, nil, err, time.Since(start))
			observe(ctx, "the connection closed with no answer to the header section")
			return false
		case err != nil:
			c.Close()
			w.record(q, first, err, time.Since(start))
			w.broken("the answer to the header section", err)
		case first.Status != 100:
			c.Close()
			w.record(q, first, nil, time.Since(start))
			if w.again(first) {
				return false
			}
			if first.Status == http.StatusExpectationFailed {
				w.fail("a valid request with Expect: 100-continue was answered 417 (Expectation Failed) before its content was sent (%s). RFC 9110 10.1.1: “%s” The 417 is for other expectations: “%s”", describe(first), QuoteRFCExpect, QuoteRFC417)
			}
			w.fail("a valid request with Expect: 100-continue was refused before its content was sent (%s): its status cannot be told from its header section. RFC 9110 10.1.1: “%s”", describe(first), QuoteRFCExpect)
		}
		if err := c.Write(q.Content()); err != nil {
			c.Close()
			w.record(q, first, err, time.Since(start))
			return false
		}
		r, err := c.ReadResponse(false)
		c.Close()
		w.record(q, r, err, time.Since(start))
		switch {
		case errors.Is(err, wire.ErrClosed) && r == nil:
			observe(ctx, "the connection closed after the 100 (Continue) with no final answer")
			return false
		case err != nil:
			w.broken("after 100 (Continue), the final answer", err)
		case w.again(r):
			return false
		case unreadable(r):
			w.inconclusive("the final answer's content does not read (judged by http.content-length): " + answer(r).ParseError)
		case !succeeded(r):
			w.fail("after 100 (Continue) and its content, the valid request was refused: %s", describe(r))
		}
		observe(ctx, "100 (Continue), then %s", describe(r))
		return true
	})
	if judged {
		return
	}
	w.inconclusive(fmt.Sprintf("no final answer in %d attempts", wireAttempts))
}

func (env *Suite) checkChunkedRequest(ctx context.Context, w *wireRun) {
	judged := w.attempts(func(c *wire.Conn, _ int) bool {
		q := w.message()
		// Pieces of uneven sizes; the last one's size is written in
		// capitals (chunk-size is HEXDIG, either case).
		q.Chunks = []int{len(q.Body) / 3, 11}
		q.Header = append(q.Header, [2]string{"Connection", "close"})
		r, err := w.exchange(c, q)
		c.Close()
		switch {
		case errors.Is(err, wire.ErrClosed) && r == nil:
			observe(ctx, "the connection closed with no answer")
			return false
		case err != nil:
			w.broken("the answer", err)
		case w.again(r):
			return false
		case r.Status == http.StatusLengthRequired:
			observe(ctx, "refused with 411 (Length Required), which RFC 9112 6.3 allows: “%s”", QuoteRFCLengthRequired)
			return true
		case unreadable(r):
			w.inconclusive("the answer's content does not read (judged by http.content-length): " + answer(r).ParseError)
		case !succeeded(r):
			w.fail("a valid request whose body is chunked was refused: %s. RFC 9112 7.1: “%s”", describe(r), QuoteRFCChunked)
		}
		observe(ctx, "the chunked body was read: %s", describe(r))
		return true
	})
	if judged {
		return
	}
	w.inconclusive(fmt.Sprintf("no answer in %d attempts", wireAttempts))
}

func (env *Suite) checkConnectionClose(ctx context.Context, w *wireRun) {
	judged := w.attempts(func(c *wire.Conn, n int) bool {
		q := w.message()
		q.Header = append(q.Header, [2]string{"Connection", "close"})
		// On the first attempt a HEAD follows at once on the same
		// connection: an answer to it shows the connection was kept. A
		// service that closes at once may reset the connection with the
		// HEAD unread, and the answer with it: the next attempts send the
		// request alone and wait for the close.
		after := w.bare(http.MethodHead, device.SendMessage)
		// The first attempt not refused for a rate pipelines.
		pipelined := n == 0
		out := q.Bytes()
		if pipelined {
			out = append(out, after.Bytes()...)
		}
		start := time.Now()
		if err := c.Write(out); err != nil {
			c.Close()
			w.record(q, nil, err, time.Since(start))
			return false
		}
		r, err := c.ReadResponse(false)
		w.record(q, r, err, time.Since(start))
		if errors.Is(err, wire.ErrClosed) && r == nil {
			c.Close()
			observe(ctx, "the connection closed with no answer")
			return false
		}
		if err != nil {
			c.Close()
			w.broken("the answer", err)
		}
		if w.again(r) {
			c.Close()
			return false
		}
		observe(ctx, "answer: %s, Connection: %q", describe(r), r.Connection())
		if pipelined {
			r2, err2 := c.ReadResponse(true)
			c.Close()
			switch {
			case r2 != nil && err2 == nil:
				w.record(after, r2, nil, time.Since(start))
				w.fail("after answering a request with Connection: close (%s), the service answered the HEAD written after it on the same connection (%s). RFC 9112 9.6: “%s” “%s”", describe(r), describe(r2), QuoteRFCClose, QuoteRFCNoFurther)
			case errors.Is(err2, wire.ErrTimeout):
				w.fail("the connection stayed open %s after the answer to a request with Connection: close. RFC 9112 9.6: “%s”", w.timeout, QuoteRFCClose)
			case err2 != nil && !errors.Is(err2, wire.ErrClosed):
				w.inconclusive("the bytes after the answer are no answer, so the close cannot be told (see http.content-length): " + err2.Error())
			}
			observe(ctx, "closed after the answer; the HEAD after it was not answered")
			return true
		}
		rest, err := c.Rest()
		c.Close()
		switch {
		case errors.Is(err, wire.ErrTimeout):
			w.fail("the connection stayed open %s after the answer to a request with Connection: close. RFC 9112 9.6: “%s”", w.timeout, QuoteRFCClose)
		case len(rest) > 0:
			w.inconclusive(fmt.Sprintf("%d bytes came after the answer, so its end cannot be told (see http.content-length)", len(rest)))
		}
		observe(ctx, "closed after the answer")
		return true
	})
	if judged {
		return
	}
	w.inconclusive(fmt.Sprintf("no answer in %d attempts", wireAttempts))
}

func (env *Suite) checkContentLength(ctx context.Context, w *wireRun) {
	judged := w.attempts(func(c *wire.Conn, n int) bool {
		q := w.message()
		// A second valid message follows at once, so that what comes
		// after the first answer's content is the second answer (which a
		// service answering out of order makes no less an answer) or the
		// close; a service that resets the connection with the second
		// unread is sent one request alone, with Connection: close, on the
		// next attempts.
		// The first attempt not refused for a rate pipelines.
		pipelined := n == 0
		out := q.Bytes()
		if pipelined {
			out = append(out, w.message().Bytes()...)
		} else {
			q.Header = append(q.Header, [2]string{"Connection", "close"})
			out = q.Bytes()
		}
		start := time.Now()
		if err := c.Write(out); err != nil {
			c.Close()
			w.record(q, nil, err, time.Since(start))
			return false
		}
		r, err := c.ReadResponse(false)
		w.record(q, r, err, time.Since(start))
		var short *wire.ShortError
		switch {
		case r != nil && r.TransferEncoding() != "" && len(r.Header.Values("Content-Length")) > 0:
			c.Close()
			w.fail("the answer carries both Content-Length %q and Transfer-Encoding %q. RFC 9112 6.2: “%s”", r.Header.Get("Content-Length"), r.TransferEncoding(), QuoteRFCLengthWithCoding)
		case errors.As(err, &short):
			c.Close()
			w.fail("the answer's Content-Length is %d, but its content ended after %d bytes when the service closed the connection (%s). RFC 9110 8.6: “%s”", short.Want, short.Got, describe(r), QuoteRFCContentLength)
		case errors.Is(err, wire.ErrClosed) && r == nil:
			c.Close()
			observe(ctx, "the connection closed with no answer")
			return false
		case errors.Is(err, wire.ErrTimeout) && r != nil && r.Framing == wire.ContentLength:
			c.Close()
			w.fail("%v: its Content-Length is %d, but only %d bytes of content came. RFC 9110 8.6: “%s”", err, r.Length, len(r.Body), QuoteRFCContentLength)
		case err != nil:
			c.Close()
			w.fail("the answer: %v", err)
		case w.again(r):
			c.Close()
			return false
		}
		if r.Framing != wire.ContentLength {
			c.Close()
			observe(ctx, "no Content-Length: the content (%d bytes) is delimited by %s, and was read whole (%s)", len(r.Body), r.Framing, describe(r))
			return true
		}
		// What comes after the header section, if anything: an error
		// reading it (a close, the timeout) means nothing came.
		var next []byte
		if pipelined {
			next, _ = c.Peek(len("HTTP/"))
		} else {
			next, _ = c.Rest()
		}
		c.Close()
		if len(next) > 0 && !(pipelined && bytes.Equal(next, []byte("HTTP/"))) {
			w.fail("the answer's Content-Length is %d, but the bytes after them are not the next answer: %q (%s). RFC 9110 8.6: “%s”", r.Length, next, describe(r), QuoteRFCContentLength)
		}
		observe(ctx, "Content-Length %d: the content read whole (%s), then %s", r.Length, describe(r),
			map[bool]string{true: "the next answer", false: map[bool]string{true: "nothing within the time-out", false: "the close"}[errors.Is(err, wire.ErrTimeout)]}[len(next) > 0])
		return true
	})
	if judged {
		return
	}
	w.inconclusive(fmt.Sprintf("no answer in %d attempts", wireAttempts))
}

func (env *Suite) checkHead(ctx context.Context, w *wireRun, op device.Operation) {
	judged := w.attempts(func(c *wire.Conn, n int) bool {
		q := w.bare(http.MethodHead, op)
		q.Header = append(q.Header, [2]string{"Content-Type", w.contentType()})
		// Two HEADs at once: after the first answer's header section
		// comes the second's status line, or the close. A service that
		// resets the connection with the second unread is sent one HEAD
		// with Connection: close on the next attempts.
		// The first attempt not refused for a rate pipelines.
		pipelined := n == 0
		out := q.Bytes()
		if pipelined {
			out = append(out, q.Bytes()...)
		} else {
			q.Header = append(q.Header, [2]string{"Connection", "close"})
			out = q.Bytes()
		}
		start := time.Now()
		if err := c.Write(out); err != nil {
			c.Close()
			w.record(q, nil, err, time.Since(start))
			return false
		}
		r, err := c.ReadResponse(true)
		w.record(q, r, err, time.Since(start))
		switch {
		case errors.Is(err, wire.ErrClosed) && r == nil:
			c.Close()
			observe(ctx, "the connection closed with no answer")
			return false
		case err != nil:
			c.Close()
			w.fail("the answer to HEAD cannot be read: %v", err)
		case w.again(r):
			c.Close()
			return false
		}
		// What comes after the header section, if anything: an error
		// reading it (a close, the timeout) means nothing came.
		var next []byte
		if pipelined {
			next, _ = c.Peek(len("HTTP/"))
		} else {
			next, _ = c.Rest()
		}
		c.Close()
		if len(next) > 0 && !(pipelined && bytes.Equal(next, []byte("HTTP/"))) {
			w.fail("the answer to HEAD (%s) is followed by content: %q. RFC 9110 9.3.2: “%s”", describe(r), next, QuoteRFCHead)
		}
		observe(ctx, "%s with no content after its header section", describe(r))
		return true
	})
	if judged {
		return
	}
	w.inconclusive(fmt.Sprintf("no answer in %d attempts", wireAttempts))
}
