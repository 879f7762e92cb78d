package server

import (
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// DefaultReplayCap bounds how many requests replay protection remembers.
// At about 100 bytes each, 100,000 is some 10 MB.
const DefaultReplayCap = 100000

const replayShards = 16

// replayCache remembers the (api_key, timestamp, sign) of each
// authenticated request (the sign made to stand for the whole request:
// replayEnvelope) until its timestamp leaves the window, after which
// the authenticator refuses it as stale anyway. Memory is bounded twice:
// entries expire, and beyond the cap the entry nearest its expiry is
// forgotten first (a replay of it would then be accepted; a warning says
// so once).
//
// The md5 sign depends on api_key, secret and timestamp only; the
// request's fields tell apart the different requests of one second.
type replayCache struct {
	// ttl is the window; entries live until timestamp + ttl. With no
	// window (0), they live ttl = auth.DefaultWindow from when seen.
	ttl      time.Duration
	windowed bool
	loc      *time.Location
	perShard int
	warned   atomic.Bool
	warn     func()
	shards   [replayShards]replayShard
}

type replayKey [16]byte

type replayShard struct {
	mu   sync.Mutex
	seen map[replayKey]int64 // expiry, Unix nanoseconds
	exp  expiryHeap
}

func newReplayCache(a *auth.Authenticator, capacity int, warn func()) *replayCache {
	c := &replayCache{ttl: a.Window, windowed: a.Window > 0, loc: a.Location, warn: warn,
		perShard: max(1, capacity/replayShards)}
	if !c.windowed {
		c.ttl = auth.DefaultWindow
	}
	if c.loc == nil {
		c.loc = time.UTC
	}
	for i := range c.shards {
		c.shards[i].seen = map[replayKey]int64{}
	}
	return c
}

// seen records an authenticated envelope and reports whether it was seen
// before and has not expired.
func (c *replayCache) seen(e *device.Envelope, now time.Time) bool {
	key := replayKeyOf(e)
	return c.record(key, e, now)
}

// forget takes back what seen recorded of e: the request was refused
// after all (CONTRACT 1 counts the requests accepted).
func (c *replayCache) forget(e *device.Envelope) {
	key := replayKeyOf(e)
	sh := &c.shards[key[0]%replayShards]
	sh.mu.Lock()
	delete(sh.seen, key) // its heap entry finds nothing to drop
	sh.mu.Unlock()
}

// replayKeyOf is the key an envelope is remembered by.
func replayKeyOf(e *device.Envelope) replayKey {
	// Lengths first, so that no two triples hash the same input; the sign
	// in lower case, since either case is the same sign.
	buf := make([]byte, 0, 32+len(e.APIKey)+len(e.Timestamp)+len(e.Sign))
	for _, f := range []string{e.APIKey, e.Timestamp, e.Sign} {
		buf = binary.AppendUvarint(buf, uint64(len(f)))
	}
	buf = append(append(buf, e.APIKey...), e.Timestamp...)
	for i := 0; i < len(e.Sign); i++ {
		ch := e.Sign[i]
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf = append(buf, ch)
	}
	sum := sha256.Sum256(buf)
	var key replayKey
	copy(key[:], sum[:])
	return key
}

// record remembers key until e's timestamp leaves the window and reports
// whether it was remembered already.
func (c *replayCache) record(key replayKey, e *device.Envelope, now time.Time) bool {
	expiry := now.Add(c.ttl)
	if c.windowed {
		t := e.Time
		expiry = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, c.loc).Add(c.ttl)
		if expiry.Before(now) { // only when the clock moved since the window check
			expiry = now
		}
	}
	nowNS := now.UnixNano()
	sh := &c.shards[key[0]%replayShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for len(sh.exp) > 0 && sh.exp[0].at <= nowNS {
		sh.drop(heap.Pop(&sh.exp).(expiring))
	}
	if at, ok := sh.seen[key]; ok && at > nowNS {
		return true
	}
	if len(sh.seen) >= c.perShard {
		sh.drop(heap.Pop(&sh.exp).(expiring))
		if c.warn != nil && !c.warned.Swap(true) {
			c.warn()
		}
	}
	sh.seen[key] = expiry.UnixNano()
	heap.Push(&sh.exp, expiring{at: expiry.UnixNano(), key: key})
	return false
}

func (sh *replayShard) drop(e expiring) {
	if sh.seen[e.key] == e.at {
		delete(sh.seen, e.key)
	}
}

// size is the number of entries remembered, for tests.
func (c *replayCache) size() int {
	n := 0
	for i := range c.shards {
		c.shards[i].mu.Lock()
		n += len(c.shards[i].seen)
		c.shards[i].mu.Unlock()
	}
	return n
}

type expiring struct {
	at  int64
	key replayKey
}

// expiryHeap is a min-heap of expiries.
type expiryHeap []expiring

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiring)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// checkReplay refuses a replay, when replay protection is on: a request
// whose operation and fields (in either format), timestamp and sign are
// those of a request accepted earlier inside the window (CONTRACT 1).
// Two different requests in the same second are never replays, though
// they carry the same sign (which depends on the timestamp alone).
// forgetReplay takes back what checkReplay remembered of req, which the
// store then refused: only an accepted request makes its repeat a replay
// (CONTRACT 1). A backend whose guard cannot forget keeps it.
func (s *Server) forgetReplay(req *device.Request) {
	if !s.cfg.RejectReplays {
		return
	}
	if f, ok := s.replays.(interface{ Forget(*device.Envelope) }); ok {
		e := replayEnvelope(req)
		f.Forget(&e)
	}
}

func (s *Server) checkReplay(req *device.Request) *device.Error {
	if !s.cfg.RejectReplays {
		return nil
	}
	e := replayEnvelope(req)
	seen, derr := s.replays.Seen(&e, s.cfg.Now())
	if derr != nil || !seen {
		return derr
	}
	return device.Errorf(device.CodeReplayedRequest, "",
		"this request (its operation, fields, timestamp and sign) was already accepted; sign each new request with a new timestamp, or send it with other fields")
}

// replayEnvelope is req's envelope with its sign replaced by a digest of
// the sign and of the whole request as parsed (operation, account,
// gateway, device, type, settings in field order, name, message), so that
// a ReplayGuard, which remembers an api_key, a timestamp and a sign, tells
// apart two different requests of one second and takes the same request
// in JSON and in XML alike. The sign is read in lower case: either case
// is the same sign.
func replayEnvelope(req *device.Request) device.Envelope {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	write := func(s string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	write(req.Op.Name())
	write(strings.ToLower(req.Sign))
	write(req.AccountID)
	write(req.MAC)
	write(req.SN)
	if req.Type != nil {
		write(req.Type.Name)
	} else {
		write("")
	}
	settings := append([]device.Setting(nil), req.Settings...)
	sort.Slice(settings, func(i, j int) bool { return settings[i].Index < settings[j].Index })
	for _, st := range settings {
		write(strconv.Itoa(st.Index))
		write(strconv.FormatFloat(st.Num, 'g', -1, 64))
		write(st.Text)
	}
	write(req.Name)
	write(req.MessageType)
	write(req.MessageValue)
	e := req.Envelope
	e.Sign = hex.EncodeToString(h.Sum(nil)[:16])
	return e
}
