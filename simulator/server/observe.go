package server

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/clients"
)

// Observer is told of every operation request once it is answered: the
// request and the answer as they were on the wire. It is called before
// the answer leaves (net/http sends it when the handler returns), so a
// client that reads a report after its answer sees its request in it.
type Observer interface {
	Observe(clients.Exchange)
}

// observed wraps an operation's handler so that Config.Observer sees the
// request's body as the handler reads it and the answer as it is written.
// The copies of both live in pooled buffers, handed back once the
// Observer has read them (it keeps none of their bytes).
func (s *Server) observed(next http.Handler) http.Handler {
	obs := s.cfg.Observer
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sent, conn, first := sentBy(r, start)
		o := observationPool.Get().(*observation)
		defer o.release()
		o.start(w, r, start, int(s.cfg.MaxBody))
		r.Body = &o.body
		next.ServeHTTP(&o.cw, r)
		// An answer given before the body was read (429) still shows the
		// observer what was sent; a body of known length read whole has
		// nothing more to show.
		for rest := s.cfg.MaxBody - int64(len(o.body.buf)); rest > 0 && int64(len(o.body.buf)) != r.ContentLength; {
			n, err := o.body.Read(o.scratch[:min(rest, int64(len(o.scratch)))])
			rest -= int64(n)
			if err != nil {
				break
			}
		}
		cw := &o.cw
		if cw.status == 0 {
			cw.status = http.StatusOK
		}
		done := cw.done // when an operation's handler recorded it done
		if done.IsZero() {
			done = time.Now()
		}
		ex := clients.Exchange{Time: start, Done: done, Path: r.URL.Path,
			ContentType: headerValue(r.Header, "Content-Type"), Body: o.body.buf, Status: cw.status,
			Header: w.Header(), Answer: cw.buf}
		if cw.pairs != nil {
			ex.Format, ex.Pairs = cw.format, *cw.pairs
			ex.Validated, ex.Invalid = cw.validated, cw.invalid
		}
		ex.AnswerError = cw.answerErr
		ex.RemoteAddr = r.RemoteAddr
		ex.Sent, ex.Conn, ex.First = sent, conn, first
		obs.Observe(ex)
		if cw.id != 0 {
			s.exchanges.put(cw.id, ex.ContentType, ex.Body, cw.status, headerValue(w.Header(), "Content-Type"), cw.buf)
		}
		if pp := cw.pairs; pp != nil {
			if cap(*pp) <= 4*pairsCap {
				clear(*pp) // no strings kept alive by the pool (the rest of its capacity is clear already)
				*pp = (*pp)[:0]
				pairsPool.Put(pp)
			}
		}
	})
}

// observation is what observed keeps of one request: the tee of its body
// and the capture of its answer, reused from request to request.
type observation struct {
	body    teeBody
	cw      captureWriter
	scratch [512]byte
}

// observationPool holds observations; buffers grown beyond keepBuf are
// left to the collector.
var observationPool = sync.Pool{New: func() any {
	return &observation{body: teeBody{buf: make([]byte, 0, 1024)}, cw: captureWriter{buf: make([]byte, 0, 256)}}
}}

const keepBuf = 16 << 10

// start readies a pooled observation for a request: every field of the
// tee and the capture is set here, one by one, rather than by assigning
// whole values, which cleared the pooled value with write barriers
// (memclrHasPointers, 1% of gwsim's CPU under wrk).
// TestObservationStartSetsEveryField keeps this list whole.
func (o *observation) start(w http.ResponseWriter, r *http.Request, start time.Time, maxBody int) {
	b := &o.body
	b.ReadCloser, b.buf, b.max = r.Body, b.buf[:0], maxBody
	c := &o.cw
	c.ResponseWriter, c.status, c.buf, c.keepPairs = w, 0, c.buf[:0], true
	c.pairs, c.format, c.validated, c.invalid, c.answerErr = nil, 0, false, nil, nil
	c.start, c.done, c.id = start, time.Time{}, 0
}

func (o *observation) release() {
	if cap(o.body.buf) > keepBuf || cap(o.cw.buf) > keepBuf {
		return
	}
	// The next request sets every field (observed); here only what
	// points elsewhere is dropped, so the pool keeps no request alive
	// without clearing the whole value twice a request.
	o.body.ReadCloser = nil
	o.cw.ResponseWriter, o.cw.pairs, o.cw.invalid, o.cw.answerErr = nil, nil, nil, nil
	observationPool.Put(o)
}

// teeBody keeps a copy of what is read of a request body, up to max bytes.
type teeBody struct {
	io.ReadCloser
	buf []byte
	max int
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if keep := min(n, t.max-len(t.buf)); keep > 0 {
		t.buf = append(t.buf, p[:keep]...)
	}
	return n, err
}

// captureWriter keeps the status and a copy of the answer's body.
type captureWriter struct {
	http.ResponseWriter
	status int
	buf    []byte
	// keepPairs asks the operation's handler to hand over the fields it
	// decoded (pairs, in format) instead of returning them to the pool.
	keepPairs bool
	pairs     *[]device.Pair
	format    device.Format
	// validated says the handler ran device.Parse on pairs, invalid is
	// its error; answerErr is the error the handler answered with.
	validated bool
	invalid   *device.Error
	answerErr *device.Error
	// start is when the observer took the request, which the operation's
	// handler uses as its own start; done is when that handler recorded
	// it answered (zero until then).
	start, done time.Time
	// id numbers the exchange for the dashboard (exchangeRing), 0 until
	// the handler journaled it.
	id uint64
}

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if keep := min(len(p), DefaultMaxBody-len(c.buf)); keep > 0 {
		c.buf = append(c.buf, p[:keep]...)
	}
	return c.ResponseWriter.Write(p)
}

// Faults is the fault injection in force.
func (s *Server) Faults() Faults { return s.faults.get() }

// SetFaults replaces the fault injection in force, as PUT /_sim/faults
// does (a scenario plays its timeline through it): faults that name a
// gateway or device the fleet does not have are refused.
func (s *Server) SetFaults(f Faults) error {
	if err := f.check(); err != nil {
		return err
	}
	if derr := s.checkNames(&f); derr != nil {
		return derr
	}
	if derr := s.setFaults(f); derr != nil {
		return derr
	}
	s.changes.Publish(Change{Kind: "faults"})
	return nil
}

// CheckFaults checks (and normalises) faults as PUT /_sim/faults does.
func CheckFaults(f *Faults) error { return f.check() }
