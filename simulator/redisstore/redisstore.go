// Package redisstore keeps gwsim's changing state in Redis so that any
// number of gwsim replicas serve one fleet: device states and names, each
// gateway's message log (capped), one journal stream, replay protection,
// rate counts and faults. Every replica still holds the fleet itself (its
// accounts, gateways, devices and their types, which never change) to
// check requests in Go; Redis holds what changes.
//
// Keys start with a prefix ("gwsim:" by default); a gateway's keys share
// the hash tag {gw:MAC} so that they live in one Cluster slot and a
// gateway's message log and count change in one transaction:
//
//	PREFIX meta            hash: fleet (sha256 of the fleet), loaded_at
//	PREFIX lock            the loading replica's lock (SET NX PX)
//	PREFIX {gw:MAC}:d:ACCOUNT:SN   hash: t type, n name, 0..k numbers, x text
//	PREFIX {gw:MAC}:m:ACCOUNT      list of messages (JSON), newest last, capped
//	PREFIX {gw:MAC}:mt:ACCOUNT     messages ever received
//	PREFIX journal          stream, MAXLEN ~ journal size; fields e (entry JSON), r (replica)
//	PREFIX journal:total    entries ever added
//	PREFIX replay:HASH      SET NX PX: an envelope seen
//	PREFIX rl:IP:SECOND     INCR + PEXPIRE: requests of a client in a second
//	PREFIX faults           the whole JSON of server.Faults
package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/store"
)

// DefaultPrefix starts every key.
const DefaultPrefix = "gwsim:"

// Options configure Open.
type Options struct {
	// URL is redis://[user:password@]host:port/db, rediss://… for TLS, or
	// with several addresses (redis://h1:p1?addr=h2:p2) a Cluster.
	URL string
	// Reset empties the prefix's keys and loads the fleet, even when
	// another fleet is loaded.
	Reset bool
	// Prefix of every key (DefaultPrefix when empty).
	Prefix string
	// Replica names this process in journal entries (host name and pid
	// when empty).
	Replica string
	// MessageLimit caps each gateway's message log
	// (store.DefaultMessageLimit when 0).
	MessageLimit int
	// JournalSize caps the journal stream (approximately, MAXLEN ~).
	JournalSize int
	// Timeout bounds each Redis call while serving (1 s when 0).
	Timeout time.Duration
	// Index, when set, is an in-memory store of the same fleet used for
	// its structure only (saves building a second one).
	Index *store.Store
	// OnLoad, when set, is told how many devices were loaded so far.
	OnLoad func(done, total int)
}

// Store is gwsim's state in Redis. All methods are safe for concurrent use.
type Store struct {
	rdb      redis.UniversalClient
	prefix   string
	replica  string
	fleet    *fleet.Fleet
	hash     string
	index    *store.Store // the fleet's structure and types; its state is not used
	firstAcc map[string]string
	limit    int
	jsize    int
	timeout  time.Duration
	journal  *journal
	updates  *batcher
}

// ErrFleetMismatch: Redis holds another fleet.
var ErrFleetMismatch = errors.New("redis holds another fleet")

// Redact returns a redis URL without its password, for messages.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the --store URL"
	}
	if u.User != nil {
		if name := u.User.Username(); name != "" {
			u.User = url.User(name)
		} else {
			u.User = nil
		}
	}
	u.RawQuery = ""
	return u.String()
}

// NewClient makes a client from a redis:// or rediss:// URL; more than one
// address (the addr query parameter) makes a Cluster client.
func NewClient(raw string) (redis.UniversalClient, error) {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, fmt.Errorf("--store must be redis://HOST:PORT/DB or rediss://HOST:PORT/DB, not %s", Redact(raw))
	}
	if len(u.Query()["addr"]) > 0 {
		o, err := redis.ParseClusterURL(raw)
		if err != nil {
			return nil, fmt.Errorf("--store %s: %s", Redact(raw), scrub(err.Error(), raw))
		}
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("--store %s: %s", Redact(raw), scrub(err.Error(), raw))
	}
	return redis.NewClient(o), nil
}

var quietOnce sync.Once

// quiet drops go-redis's own log lines (dial retries): a lost Redis is
// reported once by our own code, without the URL.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// scrub removes the URL's password from a message.
func scrub(msg, raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "***")
		}
	}
	return msg
}

// Open connects, and loads the fleet unless Redis holds it already (then
// the replica joins). A different fleet is ErrFleetMismatch unless
// Options.Reset.
func Open(ctx context.Context, f *fleet.Fleet, o Options) (*Store, error) {
	rdb, err := NewClient(o.URL)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, rdb, f, o)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return s, nil
}

func open(ctx context.Context, rdb redis.UniversalClient, f *fleet.Fleet, o Options) (*Store, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Replica == "" {
		o.Replica = defaultReplica()
	}
	if o.MessageLimit <= 0 {
		o.MessageLimit = store.DefaultMessageLimit
	}
	if o.JournalSize <= 0 {
		o.JournalSize = 1000
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := rdb.Ping(pctx).Err()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("redis at %s cannot be reached: %s", Redact(o.URL), scrub(err.Error(), o.URL))
	}
	h, err := fleetHash(f)
	if err != nil {
		return nil, err
	}
	if o.Index == nil {
		o.Index = store.New(f, 1)
	}
	s := &Store{rdb: rdb, prefix: o.Prefix, replica: o.Replica, fleet: f, hash: h, index: o.Index,
		firstAcc: map[string]string{}, limit: o.MessageLimit, jsize: o.JournalSize, timeout: o.Timeout}
	for _, a := range f.Accounts {
		for _, g := range a.Gateways {
			if _, ok := s.firstAcc[g.MAC]; !ok {
				s.firstAcc[g.MAC] = a.ID
			}
		}
	}
	if err := s.join(ctx, o); err != nil {
		return nil, err
	}
	s.journal = newJournal(s)
	s.updates = newBatcher(s)
	return s, nil
}

func defaultReplica() string {
	h, _ := osHostname()
	return h + "-" + strconv.Itoa(osPid())
}

// fleetHash is the sha256 of the fleet as YAML.
func fleetHash(f *fleet.Fleet) (string, error) {
	h := sha256.New()
	if err := f.WriteYAML(h); err != nil {
		return "", fmt.Errorf("fleet hash: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (s *Store) key(parts ...string) string { return s.prefix + strings.Join(parts, ":") }
func (s *Store) devKey(acc, mac, sn string) string {
	return s.prefix + "{gw:" + mac + "}:d:" + acc + ":" + sn
}
func (s *Store) msgKey(acc, mac string) string   { return s.prefix + "{gw:" + mac + "}:m:" + acc }
func (s *Store) totalKey(acc, mac string) string { return s.prefix + "{gw:" + mac + "}:mt:" + acc }

// join loads the fleet, or joins when the same fleet is loaded. One
// replica loads (it holds PREFIX lock); the others wait for it.
func (s *Store) join(ctx context.Context, o Options) error {
	meta := s.key("meta")
	deadline := time.Now().Add(10 * time.Minute)
	for {
		have, err := s.rdb.HGet(ctx, meta, "fleet").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("redis: %s", scrub(err.Error(), o.URL))
		}
		if err == nil && !o.Reset {
			if have != s.hash {
				return fmt.Errorf("%w (fleet sha256 %.12s…, this one %.12s…): start with the same fleet, or with --store-reset to replace it (every replica's state is lost)", ErrFleetMismatch, have, s.hash)
			}
			return nil
		}
		got, err := s.rdb.SetNX(ctx, s.key("lock"), s.replica, 10*time.Minute).Result()
		if err != nil {
			return fmt.Errorf("redis: %s", scrub(err.Error(), o.URL))
		}
		if got {
			err := s.load(ctx, o.OnLoad)
			s.rdb.Del(context.Background(), s.key("lock"))
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("redis: another replica has been loading the fleet for 10 minutes; gave up waiting")
		}
		o.Reset = false // another replica is loading; join its fleet
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// load empties the prefix's keys and writes every device, pipelined.
func (s *Store) load(ctx context.Context, progress func(done, total int)) error {
	if err := s.rdb.HDel(ctx, s.key("meta"), "fleet").Err(); err != nil {
		return err
	}
	if err := s.clear(ctx); err != nil {
		return err
	}
	if err := s.writeFleet(ctx, progress); err != nil {
		return err
	}
	return s.rdb.HSet(ctx, s.key("meta"), "fleet", s.hash, "loaded_at", time.Now().UTC().Format(time.RFC3339)).Err()
}

// clear unlinks every key under the prefix but the lock. On a Cluster
// each master is scanned, and its keys are unlinked one per command (in a
// pipeline): a multi-key UNLINK must name keys of one slot only.
func (s *Store) clear(ctx context.Context) error {
	del := func(ctx context.Context, c *redis.Client, perKey bool) error {
		iter := c.Scan(ctx, 0, s.prefix+"*", 5000).Iterator()
		var batch []string
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			var err error
			if perKey {
				_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, k := range batch {
						p.Unlink(ctx, k)
					}
					return nil
				})
			} else {
				err = c.Unlink(ctx, batch...).Err()
			}
			batch = batch[:0]
			return err
		}
		for iter.Next(ctx) {
			if k := iter.Val(); k != s.key("lock") {
				batch = append(batch, k)
			}
			if len(batch) == 5000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		return flush()
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return del(ctx, c, true) })
	}
	if c, ok := s.rdb.(*redis.Client); ok {
		return del(ctx, c, false)
	}
	return errors.New("redis: unsupported client")
}

// loadBatch is how many devices go in one pipeline.
const loadBatch = 2000

func (s *Store) writeFleet(ctx context.Context, progress func(done, total int)) error {
	_, _, total := s.index.Counts()
	done := 0
	pipe := s.rdb.Pipeline()
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		_, err := pipe.Exec(ctx)
		n = 0
		if progress != nil {
			progress(done, total)
		}
		return err
	}
	for _, a := range s.fleet.Accounts {
		for _, g := range a.Gateways {
			for _, d := range g.Devices {
				t, _ := device.LookupType(d.Type)
				st, _ := t.ParseState(d.State)
				pipe.HSet(ctx, s.devKey(a.ID, g.MAC, d.SN), deviceFields(t, d.Name, st)...)
				n++
				done++
				if n == loadBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
	}
	return flush()
}

// deviceFields are a device's hash fields: t type, n name, i the i-th
// number, x the text.
func deviceFields(t *device.Type, name string, st device.State) []any {
	out := make([]any, 0, 6+2*len(t.Fields))
	out = append(out, "t", t.Name, "n", name)
	for i, f := range t.Fields {
		if f.Kind == device.Text {
			out = append(out, "x", st.Text)
			continue
		}
		out = append(out, strconv.Itoa(i), strconv.FormatFloat(st.Num[i], 'g', -1, 64))
	}
	return out
}

// Close closes the connections.
func (s *Store) Close() error {
	s.updates.close()
	s.journal.close()
	return s.rdb.Close()
}

// Client is the Redis client (for tests and benchmarks).
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Replica is this replica's name in journal entries.
func (s *Store) Replica() string { return s.replica }

// Hash is the fleet's hash as kept in PREFIX meta.
func (s *Store) Hash() string { return s.hash }

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// unavailable is the error of a failed Redis call: nothing is
// acknowledged that Redis did not take.
func unavailable(err error) *device.Error {
	_ = err
	return device.Errorf(device.CodeStorageUnavailable, "", "the shared store (Redis) cannot be reached; nothing was changed; retry shortly")
}
