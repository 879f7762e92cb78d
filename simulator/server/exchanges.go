package server

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The dashboard opens a journal row to its request and answer: the last
// exchangeSlots exchanges are kept here, in this process's memory only
// (never in a shared store), their bytes copied into buffers that are
// reused, so that keeping them costs a request a copy and no allocation
// once the ring is warm. Secrets are masked when an exchange is read
// (Exchange), not on the request's path.

// exchangeSlots is how many exchanges the ring keeps; exchangeMax bounds
// the bytes kept of each body.
const (
	exchangeSlots = 256
	exchangeMax   = 4 << 10
)

type exchangeRing struct {
	seq   atomic.Uint64
	locks [64]sync.Mutex
	slots [exchangeSlots]exchangeSlot
}

type exchangeSlot struct {
	id                    uint64
	contentType, answerCT string
	status                int
	request, answer       []byte
	requestLen, answerLen int
}

// next numbers an exchange: the id its journal entry carries.
func (x *exchangeRing) next() uint64 { return x.seq.Add(1) }

// put keeps exchange id.
func (x *exchangeRing) put(id uint64, contentType string, request []byte, status int, answerCT string, answer []byte) {
	i := id % exchangeSlots
	mu := &x.locks[i%uint64(len(x.locks))]
	mu.Lock()
	s := &x.slots[i]
	if s.id <= id {
		s.id, s.contentType, s.answerCT, s.status = id, contentType, answerCT, status
		s.request = append(s.request[:0], request[:min(len(request), exchangeMax)]...)
		s.answer = append(s.answer[:0], answer[:min(len(answer), exchangeMax)]...)
		s.requestLen, s.answerLen = len(request), len(answer)
	}
	mu.Unlock()
}

// ExchangeView is one journal row opened: its request and answer with
// every api_key masked and the sign replaced by a marker; a body that
// could not be read and names a sign is not shown at all.
type ExchangeView struct {
	ID               uint64 `json:"id"`
	RequestType      string `json:"request_content_type"`
	Request          string `json:"request"`
	RequestTruncated bool   `json:"request_truncated,omitempty"`
	Status           int    `json:"status"`
	AnswerType       string `json:"answer_content_type"`
	Answer           string `json:"answer"`
	AnswerTruncated  bool   `json:"answer_truncated,omitempty"`
	Hidden           string `json:"hidden,omitempty"`
}

// get is exchange id, masked (keys: the fleet's, for its secrets); false
// when the ring no longer holds it.
func (x *exchangeRing) get(id uint64, keys map[string]auth.Key) (ExchangeView, bool) {
	i := id % exchangeSlots
	mu := &x.locks[i%uint64(len(x.locks))]
	mu.Lock()
	s := x.slots[i]
	s.request = append([]byte(nil), s.request...)
	s.answer = append([]byte(nil), s.answer...)
	mu.Unlock()
	if s.id != id || id == 0 {
		return ExchangeView{}, false
	}
	v := ExchangeView{ID: id, RequestType: s.contentType, Status: s.status, AnswerType: s.answerCT,
		RequestTruncated: s.requestLen > len(s.request), AnswerTruncated: s.answerLen > len(s.answer)}
	m := valueMasker(string(s.request), keys)
	v.Request, v.Hidden = maskBody(string(s.request), m)
	var hidden string
	if v.Answer, hidden = maskBody(string(s.answer), m); hidden != "" && v.Hidden == "" {
		v.Hidden = "the answer " + strings.TrimPrefix(hidden, "the body ")
	}
	return v, true
}

// valueMasker masks by value what the request carries, wherever the
// request or its answer repeats it: its api_keys, their secrets and its
// signs, read by decoding (so that "\u0061pi_key" is read as api_key).
func valueMasker(request string, keys map[string]auth.Key) *client.ValueMasker {
	m := &client.ValueMasker{}
	apiKeys, signs := client.Credentials(strings.ToValidUTF8(request, "\uFFFD"))
	m.Add("key", apiKeys...)
	m.Add("sign", signs...)
	for _, k := range apiKeys {
		if key, ok := keys[k]; ok {
			m.Add("secret", key.Secret)
		}
	}
	return m
}

// maskedSign matches a sign field whose value RedactSign replaced.
var maskedSign = regexp.MustCompile(`"sign"\s*:\s*"<SIGNATURE>"|<sign>(?:<SIGNATURE>|&lt;SIGNATURE&gt;)</sign>`)

// maskBody masks a body by value first (m: the request's api_keys,
// secrets and signs, wherever they appear), then every api_key and sign
// field by pattern; when a sign or an api_key still shows in a form the
// masking does not read, the body is withheld.
func maskBody(b string, m *client.ValueMasker) (string, string) {
	b = client.MaskAPIKeys(client.RedactSign(m.Mask(strings.ToValidUTF8(b, "\uFFFD"))))
	rest := strings.ReplaceAll(maskedSign.ReplaceAllString(b, ""), client.SignMarker, "")
	if strings.Contains(strings.ToLower(rest), device.FieldSign) || client.Unmasked(b) {
		return "", "the body names a sign or an api_key in a form that cannot be masked, so it is not shown"
	}
	return b, ""
}

// exchangeID numbers the exchange w answers, when the observer keeps its
// bytes (w is its captureWriter): the id of its journal entry; 0
// otherwise.
func (s *Server) exchangeID(w http.ResponseWriter) uint64 {
	cw, ok := w.(*captureWriter)
	if !ok {
		return 0
	}
	cw.id = s.exchanges.next()
	return cw.id
}

// appNames shows the api_keys the journal names masked (client.MaskAPIKey),
// each masked once: a request of a known key costs a map read.
type appNames struct {
	names sync.Map // api_key -> masked
	n     atomic.Int64
}

// maxAppNames bounds the keys remembered; further keys are masked anew
// on each request.
const maxAppNames = 1000

func (a *appNames) name(key string) string {
	if key == "" {
		return ""
	}
	if v, ok := a.names.Load(key); ok {
		return v.(string)
	}
	m := client.MaskAPIKey(key)
	if a.n.Load() < maxAppNames {
		if _, loaded := a.names.LoadOrStore(strings.Clone(key), m); !loaded {
			a.n.Add(1)
		}
	}
	return m
}

// replayed journals the answers a recording gave in the simulator's place
// (gwsim serve --replay: next is the cassette's handler around the
// operation's), marked as such; the operation journals its own.
func (s *Server) replayed(op device.Operation, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		cw, _ := w.(*captureWriter)
		sw := w
		var st *statusWriter
		if cw == nil {
			st = &statusWriter{ResponseWriter: w}
			sw = st
		}
		next.ServeHTTP(sw, r)
		if headerValue(w.Header(), "X-Gwsim-Replayed") != "true" {
			return
		}
		status := http.StatusOK
		var answer []byte
		if cw != nil {
			if cw.status != 0 {
				status = cw.status
			}
			answer = cw.buf
		} else if st.status != 0 {
			status = st.status
		}
		ct := headerValue(r.Header, "Content-Type")
		body, _ := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBody))
		ent := Entry{Time: start.UTC(), Method: truncate(r.Method, 32), Path: truncate(r.URL.Path, 200), Status: status,
			DurationUS: time.Since(start).Microseconds(), Replayed: true, ID: s.exchangeID(w)}
		if f, derr := codec.FormatOf(ct); derr == nil {
			ent.Format = f.String()
			if pairs, derr := codec.Decode(f, body); derr == nil {
				if req := named(pairs); req != nil {
					ent.MAC, ent.SN, ent.App = req.MAC, req.SN, s.apps.name(req.APIKey)
				}
			}
		}
		if status != http.StatusOK {
			p := client.ParseAnswer(headerValue(w.Header(), "Content-Type"), answer)
			ent.Code, ent.Field = truncate(p.ErrorCode, 64), truncate(p.ErrorField, 64)
		}
		s.journal.Add(ent)
		if s.changes.Watched() {
			published := ent
			s.changes.Publish(Change{Kind: "request", Entry: &published, Replica: s.cfg.Replica})
		}
		s.counts.count(status)
	})
}

// statusWriter notes the status an answer was given with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}
