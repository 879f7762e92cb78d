package server

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/store"
)

// operation serves one of the three POST operations: bytes -> codec ->
// domain validation -> authentication -> store -> answer.
func (s *Server) operation(op device.Operation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw, _ := w.(*captureWriter)
		var start time.Time
		if cw != nil && !cw.start.IsZero() {
			start = cw.start // the observer's clock reading, not a second one
		} else {
			start = time.Now()
		}
		if s.limited(op, w, r, start) {
			return
		}
		req, format, derr := s.handle(op, w, r)
		status := http.StatusOK
		if derr != nil {
			status = StatusOf(derr.Code)
			if derr.Code == device.CodeMethodNotAllowed {
				w.Header().Set("Allow", http.MethodPost)
			}
			s.fail(w, orJSON(format), derr)
			if cw != nil {
				cw.answerErr = derr // the client report reads it rather than the answer's bytes
			}
		} else {
			// A shared, never-modified value: Header().Set would allocate
			// a slice per request.
			w.Header()["Content-Type"] = successContentType[format]
			w.WriteHeader(http.StatusOK)
			if s.cfg.Latitudes.Pretty {
				w.Write(pretty(format, codec.Success(format)))
			} else {
				w.Write(codec.Success(format))
			}
		}
		took := s.record(r, op, start, format, status, derr, req, s.exchangeID(w))
		if cw != nil {
			cw.done = start.Add(took)
		}
	})
}

// pairsCap is the capacity of the pooled pair slices: more than the
// largest published request's 12 fields.
const pairsCap = 16

// pairsPool holds the slices codec.DecodeInto fills, one per request in
// flight.
var pairsPool = sync.Pool{New: func() any { p := make([]device.Pair, 0, pairsCap); return &p }}

// successContentType is the Content-Type header value of a success
// answer, by format; shared by every answer, so it must not be modified.
var successContentType = map[device.Format][]string{
	device.JSON: {codec.ContentType(device.JSON)},
	device.XML:  {codec.ContentType(device.XML)},
}

// formatOf is the format a request's Content-Type names, or 0 when it
// names none: errors found before the body is read still answer in the
// request's format where it can be told (CONTRACT 4).
func formatOf(r *http.Request) device.Format {
	f, err := codec.FormatOf(headerValue(r.Header, "Content-Type"))
	if err != nil {
		return 0
	}
	return f
}

// headerValue is h.Get(key) for a key already in canonical form, as
// net/http stores a request's header: the map read without Get's
// canonicalising of the key (textproto.CanonicalMIMEHeaderKey, 1.3% of
// gwsim's CPU under wrk).
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func orJSON(f device.Format) device.Format {
	if f == 0 {
		return device.JSON
	}
	return f
}

func (s *Server) handle(op device.Operation, w http.ResponseWriter, r *http.Request) (*device.Request, device.Format, *device.Error) {
	if r.Method != http.MethodPost {
		return nil, formatOf(r), device.Errorf(device.CodeMethodNotAllowed, "", "%s is not allowed on %s; use POST", r.Method, op.Path())
	}
	if cts := r.Header["Content-Type"]; len(cts) > 1 {
		return nil, 0, device.Errorf(device.CodeUnsupportedMediaType, "Content-Type", "Content-Type appears %d times; send it once", len(cts))
	}
	format, derr := codec.FormatOf(headerValue(r.Header, "Content-Type"))
	if derr != nil {
		return nil, 0, derr
	}
	body, buf, derr := s.readBody(w, r)
	if derr != nil {
		return nil, format, derr
	}
	// Decode copies what it keeps, so the body's buffer goes back to the
	// pool at once; Parse copies what it keeps of the pairs, so their
	// slice goes back once it is done.
	pp := pairsPool.Get().(*[]device.Pair)
	pairs, derr := codec.DecodeOpen(format, body, *pp, s.cfg.OpenForms)
	putBody(buf)
	if derr != nil {
		clear((*pp)[:cap(*pp)]) // a fast reader may have filled some before giving up
		pairsPool.Put(pp)
		return nil, format, derr
	}
	req, derr := device.ParseOpen(op, format, pairs, s.cfg.OpenForms)
	if derr != nil {
		// Refused, but the body was read: the journal and the dashboard
		// still name the gateway and device it was about.
		req = named(pairs)
	}
	if cw, ok := w.(*captureWriter); ok && cw.keepPairs {
		// The observer reads these fields rather than decoding the body
		// again; observed returns the slice to the pool once it has.
		*pp = pairs
		cw.pairs, cw.format = pp, format
		cw.validated, cw.invalid = true, derr
	} else if cap(pairs) <= 4*pairsCap {
		clear(pairs) // no strings kept alive by the pool
		*pp = pairs[:0]
		pairsPool.Put(pp)
	}
	if derr != nil {
		return req, format, derr
	}
	if derr := s.cfg.Auth.Check(&req.Envelope); derr != nil {
		return req, format, derr
	}
	if derr := s.inject(r, op, req); derr != nil {
		return req, format, derr
	}
	// After the faults: a request a fault refused was not accepted, and
	// the same request sent again once the fault is over is no replay.
	if derr := s.checkReplay(req); derr != nil {
		return req, format, derr
	}
	st := s.store
	switch op {
	case device.SendCommand:
		derr = st.Command(req.AccountID, req.MAC, req.SN, req.Type, req.Settings)
	case device.SendMessage:
		derr = st.Message(req.AccountID, req.MAC, store.Message{Time: s.cfg.Now().UTC(), Type: req.MessageType, Value: req.MessageValue})
	case device.UpdateName:
		derr = st.Rename(req.AccountID, req.MAC, req.SN, req.Name)
	}
	if derr != nil {
		s.forgetReplay(req)
	}
	return req, format, derr
}

// inject applies fault injection: latency, offline gateways, error rate.
func (s *Server) inject(r *http.Request, op device.Operation, req *device.Request) *device.Error {
	latency, fail := s.faults.draw()
	slow, unreachable, opFail := s.faults.device(op, req.MAC, req.SN)
	latency += slow
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	if s.faults.isOffline(req.MAC) {
		has, derr := s.store.HasGateway(req.AccountID, req.MAC)
		if derr != nil {
			return derr
		}
		if has {
			return device.Errorf(device.CodeGatewayOffline, device.FieldMAC, "gateway %s is offline (fault injection)", req.MAC)
		}
	}
	if unreachable && req.SN != "" {
		return device.Errorf(device.CodeDeviceUnreachable, device.FieldSN, "device %s on gateway %s does not answer (fault injection)", req.SN, req.MAC)
	}
	if fail {
		return device.Errorf(device.CodeInjectedFault, "", "injected failure (fault injection error_rate)")
	}
	if opFail {
		return device.Errorf(device.CodeInjectedFault, "", "injected failure (fault injection operation_error_rates.%s)", op.Name())
	}
	return nil
}

func (s *Server) fail(w http.ResponseWriter, f device.Format, e *device.Error) {
	w.Header().Set("Content-Type", codec.ContentType(f))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch e.Code {
	case device.CodeStorageUnavailable:
		w.Header().Set("Retry-After", "1")
	case device.CodeInjectedFault, device.CodeGatewayOffline, device.CodeDeviceUnreachable:
		// What a real service sends with these (Faults.RetryAfter).
		if v := s.faults.retryAfter(time.Now()); v != "" {
			w.Header()["Retry-After"] = []string{v}
		}
	}
	w.WriteHeader(StatusOf(e.Code))
	if s.cfg.Latitudes.OwnDetails {
		e = ownDetails(e)
	}
	body := codec.Error(f, e)
	if s.cfg.Latitudes.Pretty {
		body = pretty(f, body)
	}
	w.Write(body)
}

// record writes the journal entry and the log line. It never logs the
// sign, the api_key's secret or the body.
// It returns how long the request took.
func (s *Server) record(r *http.Request, op device.Operation, start time.Time, f device.Format, status int, e *device.Error, req *device.Request, id uint64) time.Duration {
	took := time.Since(start)
	ent := Entry{Time: start.UTC(), Method: truncate(r.Method, 32), Path: truncate(r.URL.Path, 200), Status: status,
		DurationUS: took.Microseconds(), ID: id}
	if f != 0 {
		ent.Format = f.String()
	}
	if e != nil {
		ent.Code, ent.Field = e.Code, e.Field
		if e.Code == device.CodeStorageUnavailable {
			s.refusedAt.CompareAndSwap(0, start.UnixNano())
		}
	}
	if req != nil {
		ent.MAC, ent.SN = req.MAC, req.SN
		ent.App = s.apps.name(req.APIKey)
	}
	s.journal.Add(ent)
	if s.changes.Watched() {
		published := ent // only this copy escapes to the heap
		s.changes.Publish(Change{Kind: "request", Entry: &published, Replica: s.cfg.Replica})
	}
	s.counts.count(status)
	if s.metrics != nil {
		s.metrics.Request(op, f, status, ent.Code, took)
	}
	if s.access.on {
		s.logRequest(r, &ent, e)
	} else if status >= 500 && e != nil && e.Code == device.CodeStorageFailed {
		// gwsim's own failure, not an injected one: always worth a line.
		s.logRequest(r, &ent, e)
	}
	return took
}

// namedMax bounds the mac and sn a refused body names in the journal: a
// valid one is 12 or 32 characters.
const namedMax = 64

// named is a request holding only the mac and sn that a body which failed
// validation named (trimmed, mac in lower case as Parse keeps it), for
// the journal; nil when it named neither.
func named(pairs []device.Pair) *device.Request {
	var mac, sn, key string
	for _, p := range pairs {
		switch p.Key {
		case device.FieldAPIKey:
			key = strings.TrimSpace(p.Value.Text)
		case device.FieldMAC:
			mac = strings.ToLower(strings.TrimSpace(p.Value.Text))
		case device.FieldSN, device.FieldDeviceID:
			if sn == "" || p.Key == device.FieldSN {
				sn = strings.ToLower(strings.TrimSpace(p.Value.Text))
			}
		}
	}
	if mac == "" && sn == "" && key == "" {
		return nil
	}
	req := &device.Request{SN: truncate(sn, namedMax)}
	req.MAC = truncate(mac, namedMax)
	req.APIKey = key
	return req
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
