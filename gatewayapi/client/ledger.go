package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Ledger keeps what a run has sent, so that none of its requests is a
// replay of another by accident. CONTRACT 1: "a request whose operation
// and fields (in either format), timestamp and sign are those of a
// request accepted earlier inside the window is a replay", which a
// faithful service may refuse. A request that would repeat one already
// sent is varied before it goes: its timestamp moved to the nearest second
// no request of the same operation and fields has used (Request.Vary),
// or, where the timestamp is the thing tested, written again in the next
// second (Request.Renew); only a request whose timestamp is pinned, or one
// repeated on purpose (Request.Repeat), is sent as it is.
//
// It keys a request once, from the fields the client sends (signed), not
// from their bytes: the operation (its method, and its path as a service
// may route it: canonicalPath), every field by
// its name with a JSON key's space read as the XML name's underscore, and
// each value with hexadecimal letters, enumerated values and number forms
// folded, so that the same request in the other format, or with a field's
// value in another case or number syntax, is the same key.
//
// Only a request accepted earlier makes a replay: a key is held while its
// request is in flight and kept once it was accepted (a 2xx, or no answer
// at all, which may have been one); a refused request's key is free
// again, so that the many requests a run sends with the same fields and
// some other fault (a method, a path, a Content-Type) do not use up the
// seconds around the clock. A refusal as a replay (401 replayed_request)
// of a request the run did not send before says another sender's was
// taken in that second: its key stays used, and the Client sends the
// request again in another second.
//
// A Ledger may be shared by the goroutines of one Client.
type Ledger struct {
	// MaxShift is the farthest a timestamp is moved (half a window or
	// less keeps it well inside); 0: DefaultMaxShift.
	MaxShift time.Duration

	mu sync.Mutex
	// sent holds the keys in flight (false) and accepted (true).
	sent map[string]bool
	// worker and workers make the seconds of a --parallel run's workers
	// disjoint: worker w writes only the seconds s where s mod workers is
	// w, so that the requests of two processes cannot repeat each other.
	worker, workers int64
	varied          int
}

// DefaultMaxShift is how far a timestamp is moved at most by default:
// half of CONTRACT 1's default window (±300 s).
const DefaultMaxShift = 150 * time.Second

// NewLedger is an empty ledger whose timestamps move at most maxShift
// (0: DefaultMaxShift).
func NewLedger(maxShift time.Duration) *Ledger {
	return &Ledger{MaxShift: maxShift, sent: map[string]bool{}}
}

// Share gives this process the seconds of worker w of n (--parallel): no
// other worker's request can then repeat one of its own.
func (l *Ledger) Share(w, n int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > 1 {
		l.worker, l.workers = int64(w), int64(n)
	}
}

// Varied is how many requests were varied so as not to repeat another.
func (l *Ledger) Varied() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.varied
}

// timestampLayout is the interface's timestamp form.
const timestampLayout = "20060102150405"

// claim holds the request about to be sent, varied where it would repeat
// one sent before or write another worker's second; sign signs a field
// list as the client sends it. It gives the fields to send, the func to
// call with the answer (whether the request was accepted), and whether
// they repeat a request accepted before (pinned, or repeated on purpose).
func (l *Ledger) claim(ctx context.Context, req Request, fields []Field, sign func([]Field) ([]Field, error)) ([]Field, func(accepted bool), bool, error) {
	key := l.key(req, fields)
	if req.Repeat {
		return fields, l.hold(key, false), l.accepted(key), nil
	}
	if l.free(key, fields) && l.take(key) {
		return fields, l.hold(key, true), false, nil
	}
	max := int(l.maxShift() / time.Second)
	if req.Vary != nil {
		// The nearest free second, later first: +1, -1, +2, -2, …
		for i := 1; i <= 2*max; i++ {
			shift := (i + 1) / 2
			if i%2 == 0 {
				shift = -shift
			}
			moved, err := sign(req.Vary(shift))
			if err != nil {
				return nil, nil, false, err
			}
			if k := l.key(req, moved); l.free(k, moved) && l.take(k) {
				l.count()
				return moved, l.hold(k, true), false, nil
			}
		}
	} else if req.Renew != nil {
		// The timestamp is the thing tested: the same clock, in a later
		// second.
		for i := 0; i < 3; i++ {
			if err := sleep(ctx, time.Until(time.Now().Truncate(time.Second).Add(time.Second))); err != nil {
				return nil, nil, false, err
			}
			again, err := sign(req.Renew())
			if err != nil {
				return nil, nil, false, err
			}
			if k := l.key(req, again); l.free(k, again) && l.take(k) {
				l.count()
				return again, l.hold(k, true), false, nil
			}
		}
	}
	// Pinned: sent as it is.
	return fields, l.hold(key, false), l.accepted(key), nil
}

// accepted says key's request was sent and accepted before.
func (l *Ledger) accepted(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent[key]
}

// hold is the func that settles key once its request is answered: kept
// when accepted, else free again if this request took it (took).
func (l *Ledger) hold(key string, took bool) func(bool) {
	return func(accepted bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case accepted:
			l.sent[key] = true
		case took && !l.sent[key]:
			delete(l.sent, key)
		}
	}
}

// record keeps the key of a request sent as it is (a raw body, by the
// fields it was encoded from) and gives the func that settles it.
func (l *Ledger) record(req Request, fields []Field) func(bool) {
	key := l.key(req, fields)
	return l.hold(key, l.take(key))
}

// mayMove says a request refused as a replay moved times already may be
// moved once more: one that can be moved (Vary) to each second of the
// ledger's range at most once, one renewed in a later second (Renew,
// which waits for it) three times.
func (l *Ledger) mayMove(req Request, moved int) bool {
	if req.Vary == nil {
		return moved < 3
	}
	return moved < 2*int(l.maxShift()/time.Second)
}

func (l *Ledger) count() {
	l.mu.Lock()
	l.varied++
	l.mu.Unlock()
}

func (l *Ledger) maxShift() time.Duration {
	if l.MaxShift > 0 {
		return l.MaxShift
	}
	return DefaultMaxShift
}

// free says whether key was not sent yet and its timestamp's second is
// this process's.
func (l *Ledger) free(key string, fields []Field) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.sent[key]; dup {
		return false
	}
	if l.workers > 1 {
		for _, f := range fields {
			if f.Key != device.FieldTimestamp {
				continue
			}
			if t, err := time.Parse(timestampLayout, fmt.Sprint(f.Value)); err == nil {
				if s := t.Unix() % l.workers; (s+l.workers)%l.workers != l.worker {
					return false
				}
			}
		}
	}
	return true
}

// take records key; false when another goroutine took it first.
func (l *Ledger) take(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.sent[key]; dup {
		return false
	}
	l.sent[key] = false
	return true
}

// key is a request's operation and fields as CONTRACT 1 compares them.
func (l *Ledger) key(req Request, fields []Field) string {
	// A service may take device_id as sn (CONTRACT 2: an alias; both
	// present must be equal) and need not count format, which only
	// repeats the Content-Type: the key folds both, so that no two
	// requests one service could call the same one are sent in a second.
	parts := make([]string, 0, len(fields)+1)
	seen := map[string]bool{}
	for _, f := range fields {
		name := canonicalName(f.Key)
		switch name {
		case "format":
			continue
		case "device_id":
			name = "sn"
		}
		part := name + "\x00" + canonicalValue(f.Value)
		if seen[part] {
			continue
		}
		seen[part] = true
		parts = append(parts, part)
	}
	sort.Strings(parts)
	method := req.Method
	if method == "" {
		method = "POST"
	}
	return strings.ToUpper(method) + " " + canonicalPath(req.Path) + "\x01" + strings.Join(parts, "\x01")
}

// canonicalPath is a request path as a service may route it: without its
// query, percent-decoded, its dot-segments, doubled and trailing slashes
// removed, in any case. A service that takes /v1/services/gateway/comman%64
// or …/command?x=1 as the command operation takes it as the same request,
// and may refuse it as a replay of the plain path's.
func canonicalPath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	return strings.ToLower(path.Clean("/" + p))
}

// canonicalName is a field's name in either format: "cooling point" in
// JSON is cooling_point in XML.
func canonicalName(k string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(k), " ", "_"))
}

// canonicalValue folds what a service may store as the same value:
// hexadecimal and enumerated values in any case, a number in any syntax,
// a name around its spaces.
func canonicalValue(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	case json.RawMessage:
		s = string(x)
	default:
		s = fmt.Sprint(v)
	}
	s = strings.ToLower(strings.TrimSpace(s))
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n == 0 {
			n = 0 // -0 is 0: its value decides (CONTRACT 2)
		}
		return strconv.FormatFloat(n, 'g', -1, 64)
	}
	return s
}
