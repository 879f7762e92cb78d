package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/server"
)

// IsURL reports whether a --store URL names Redis: redis://, rediss://
// (a Cluster with addr parameters) or redis+sentinel://.
func IsURL(raw string) bool {
	for _, p := range []string{"redis://", "rediss://", SentinelScheme} {
		if strings.HasPrefix(raw, p) {
			return true
		}
	}
	return false
}

// OpenBackend is the backend of a Redis --store URL: every part in Redis,
// shared by every replica started with the same URL and fleet.
func OpenBackend(ctx context.Context, o server.BackendOptions) (server.Backend, error) {
	d := DurabilityPrimary
	if o.Replicated {
		d = DurabilityReplicated
	}
	s, err := Open(ctx, o.Fleet, Options{URL: o.URL, SentinelPassword: o.SentinelPassword, Reset: o.Reset, Replica: o.Replica,
		MessageLimit: o.MessageLimit, JournalSize: o.JournalSize, Durability: d})
	if err != nil {
		return server.Backend{}, err
	}
	b := s.Backend(o.Window)
	b.Describe = Redact(o.URL) + " (replica " + s.Replica() + ")"
	b.Close = s.Close
	b.Reachable = func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }
	b.Abandon = s.Abandon
	b.PauseWrites = s.pauseWrites
	return b, nil
}

// pauseWrites makes Redis refuse every change, of every replica, for d
// (CLIENT PAUSE WRITE: writes wait and gwsim's calls time out), or ends
// that early when d is 0. WRITE rather than ALL: under ALL, Redis holds
// CLIENT UNPAUSE and new connections' HELLO too, so the loss could not be
// ended early.
func (s *Store) pauseWrites(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return s.rdb.Do(ctx, "CLIENT", "UNPAUSE").Err()
	}
	return s.rdb.Do(ctx, "CLIENT", "PAUSE", max(1, d.Milliseconds()), "WRITE").Err()
}

// Backend is the store as every part of the server's Backend: state,
// journal, replay protection, rate counts, faults, dashboard sessions, the
// event feed and health, all in Redis. window is the authenticator's
// timestamp window (auth.DefaultWindow when 0).
func (s *Store) Backend(window time.Duration) server.Backend {
	if window <= 0 {
		window = auth.DefaultWindow
	}
	return server.Backend{State: s, Journal: s.journal, Replays: replays{s, window}, Rates: rates{s}, Guesses: guesses{s},
		Faults: faults{s}, Sessions: s.Sessions(), Changes: s.Feed(), Health: s.Health(), ClientReports: s.ClientReports()}
}

// replays is replay protection in Redis (server.ReplayGuard).
type replays struct {
	s      *Store
	window time.Duration
}

// Seen implements server.ReplayGuard.
func (r replays) Seen(e *device.Envelope, _ time.Time) (bool, *device.Error) {
	return r.s.seen(e, r.window)
}

// rates are the rate counts in Redis (server.RateCounter).
type rates struct{ s *Store }

// Allow implements server.RateCounter.
func (r rates) Allow(client netip.Addr, limit int) (bool, time.Duration, *device.Error) {
	return r.s.allow(client, limit)
}

// guesses count wrong admin tokens in Redis (server.GuessCounter).
type guesses struct{ s *Store }

// Failed implements server.GuessCounter.
func (g guesses) Failed(client netip.Addr) (bool, time.Duration, *device.Error) {
	return g.s.failedGuess(client)
}

// Wrong admin tokens a client may send across the replicas in
// guessWindow.
const (
	guessBurst  = 10
	guessWindow = time.Minute
)

// failedGuess counts a wrong admin token of client across replicas: a
// window of guessWindow opens at the first (SET NX PX), each failure is
// counted in it (INCR keeps the expiry), and beyond guessBurst the client
// waits for the window's end (PTTL).
func (s *Store) failedGuess(client netip.Addr) (bool, time.Duration, *device.Error) {
	ctx, cancel := s.ctx()
	defer cancel()
	k := s.key("guess", client.String())
	var n *redis.IntCmd
	var ttl *redis.DurationCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, k, 0, guessWindow)
		n = p.Incr(ctx, k)
		ttl = p.PTTL(ctx, k)
		return nil
	})
	if err != nil {
		return false, 0, unavailable(err)
	}
	if n.Val() <= guessBurst {
		return true, 0, nil
	}
	wait := ttl.Val()
	if wait <= 0 {
		wait = guessWindow
	}
	return false, wait, nil
}

// faults are the faults in Redis (server.FaultStore).
type faults struct{ s *Store }

// Load implements server.FaultStore.
func (f faults) Load() ([]byte, *device.Error) { return f.s.loadFaults() }

// Save implements server.FaultStore.
func (f faults) Save(b []byte) *device.Error { return f.s.saveFaults(b) }

// seen records an envelope with SET NX PX: whichever replica gets a
// replay, the key is there. A request passes authentication only with a
// timestamp within window of now, so it is kept for twice the window.
func (s *Store) seen(e *device.Envelope, window time.Duration) (bool, *device.Error) {
	h := sha256.New()
	for _, p := range []string{e.APIKey, e.Timestamp, strings.ToLower(e.Sign)} {
		h.Write([]byte(strconv.Itoa(len(p)) + ":" + p))
	}
	ctx, cancel := s.ctx()
	defer cancel()
	ok, err := s.rdb.SetNX(ctx, s.key("replay", hex.EncodeToString(h.Sum(nil)[:16])), 1, 2*window).Result()
	if err != nil {
		return false, unavailable(err)
	}
	return !ok, nil
}

// allow counts a client's requests in the current second across replicas
// (INCR + PEXPIRE): a fixed one-second window, limit requests in each.
func (s *Store) allow(client netip.Addr, limit int) (bool, time.Duration, *device.Error) {
	now := time.Now()
	sec := now.Unix()
	ctx, cancel := s.ctx()
	defer cancel()
	var n *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		k := s.key("rl", client.String(), strconv.FormatInt(sec, 10))
		n = p.Incr(ctx, k)
		p.PExpire(ctx, k, 2*time.Second)
		return nil
	})
	if err != nil {
		return false, 0, unavailable(err)
	}
	if n.Val() <= int64(limit) {
		return true, 0, nil
	}
	return false, time.Unix(sec+1, 0).Sub(now), nil
}

func (s *Store) loadFaults() ([]byte, *device.Error) {
	ctx, cancel := s.ctx()
	defer cancel()
	b, err := s.rdb.Get(ctx, s.key("faults")).Bytes()
	if errors.Is(err, redis.Nil) {
		return []byte(`{"latency":"0s","error_rate":0,"offline_gateways":[]}`), nil
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return b, nil
}

func (s *Store) saveFaults(b []byte) *device.Error {
	ctx, cancel := s.writeCtx()
	defer cancel()
	confirmed, err := s.pipelineWait(ctx, s.wait, func(p redis.Pipeliner) error {
		p.Set(ctx, s.key("faults"), b, 0)
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	if !confirmed {
		return s.notReplicated()
	}
	return nil
}
