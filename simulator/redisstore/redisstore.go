// Package redisstore keeps gwsim's changing state in Redis so that any
// number of gwsim replicas serve one fleet: device states and names, each
// gateway's message log (capped), one journal stream, replay protection,
// rate counts, faults, dashboard sessions and the dashboard's event feed.
// Every replica holds the fleet's structure (a store.Index: its accounts,
// gateways, devices and their types, which never change) to check
// requests in Go, and no state of its own: Redis holds what changes.
//
// Keys start with a prefix ("gwsim:" by default); a gateway's keys share
// the hash tag {gw:MAC} so that they live in one Cluster slot and a
// gateway's message log and count change in one script:
//
//	PREFIX meta            hash: fleet (sha256 of the fleet), loaded_at
//	PREFIX lock            the loading replica's lock (SET NX PX)
//	PREFIX {gw:MAC}:d:ACCOUNT:SN   hash: t type, n name, 0..k numbers, x text
//	PREFIX {gw:MAC}:m:ACCOUNT      list of messages (JSON), newest last, capped
//	PREFIX {gw:MAC}:mt:ACCOUNT     messages ever received (0 from the load on)
//	PREFIX journal          stream, MAXLEN ~ journal size; fields e (entry JSON), r (replica)
//	PREFIX journal:total    entries ever added
//	PREFIX replay:HASH      SET NX PX: an envelope seen
//	PREFIX rl:IP:SECOND     INCR + PEXPIRE: requests of a client in a second
//	PREFIX faults           the whole JSON of server.Faults
//	PREFIX session:HASH     SET PX: a dashboard session (a hash of its id)
//	PREFIX health:REPLICA   SET PX: a replica's write probe (its health check)
//	PREFIX events           pub/sub channel: the dashboard's events, and
//	                        {"watch": REPLICA} from a replica with a page open
//
// The store is every part of server.Backend (Store.Backend); with
// DurabilityReplicated each change is acknowledged only once a Redis
// replica has it too (WAIT).
package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
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
	// SentinelPassword, with a redis+sentinel:// URL, is the password of
	// the Sentinels themselves (their requirepass: FailoverOptions.
	// SentinelPassword); the URL's password is the data nodes'. Refused
	// with any other URL. No error or description shows it.
	SentinelPassword string
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
	// Index, when set, is the fleet's structure (store.NewIndex of the
	// same fleet), to share one already built.
	Index *store.Index
	// OnLoad, when set, is told how many devices were loaded so far.
	OnLoad func(done, total int)
	// Durability is when a change is acknowledged: once the primary has
	// it (DurabilityPrimary, the default) or once a replica has it too
	// (DurabilityReplicated: Redis WAIT).
	Durability Durability
	// WaitTimeout bounds WAIT with DurabilityReplicated
	// (DefaultWaitTimeout when 0).
	WaitTimeout time.Duration
}

// Durability is when a change is acknowledged.
type Durability string

const (
	// DurabilityPrimary acknowledges a change once the Redis primary has
	// applied it; its replicas get it asynchronously, so a failover may
	// lose the last changes acknowledged.
	DurabilityPrimary Durability = "primary"
	// DurabilityReplicated acknowledges a change only once at least one
	// replica has it too (WAIT 1 WaitTimeout after the write, in the same
	// round trip).
	DurabilityReplicated Durability = "replicated"
)

// DefaultWaitTimeout is how long a change waits for a replica with
// DurabilityReplicated before it is answered 503 storage_unavailable.
const DefaultWaitTimeout = time.Second

// ParseDurability reads --store-durability.
func ParseDurability(v string) (Durability, error) {
	switch d := Durability(v); d {
	case "", DurabilityPrimary:
		return DurabilityPrimary, nil
	case DurabilityReplicated:
		return d, nil
	}
	return "", fmt.Errorf("--store-durability must be primary or replicated, not %q", v)
}

// Store is gwsim's state in Redis. All methods are safe for concurrent use.
type Store struct {
	rdb     redis.UniversalClient
	prefix  string
	replica string
	fleet   *fleet.Fleet
	hash    string
	index   *store.Index // the fleet's structure and types, which never change
	limit   int
	jsize   int
	timeout time.Duration
	journal *journal
	updates *batcher
	// wait is the WAIT timeout with DurabilityReplicated, 0 otherwise.
	wait     time.Duration
	feedOnce sync.Once
	feed     *Feed
}

// ErrFleetMismatch: Redis holds another fleet.
var ErrFleetMismatch = errors.New("redis holds another fleet")

// SentinelScheme starts a --store URL that follows a Redis Sentinel setup.
const SentinelScheme = "redis+sentinel://"

// Redact returns a redis URL without its password, for messages.
func Redact(raw string) string {
	if rest, ok := strings.CutPrefix(raw, SentinelScheme); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user, _, _ := strings.Cut(rest[:at], ":")
			rest = rest[at+1:]
			if user != "" {
				rest = user + "@" + rest
			}
		}
		rest, _, _ = strings.Cut(rest, "?")
		return SentinelScheme + rest
	}
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
// address (the addr query parameter) makes a Cluster client, and a
// redis+sentinel:// URL a client that follows the primary Sentinel names
// (asked without a password: Open takes one in Options.SentinelPassword).
func NewClient(raw string) (redis.UniversalClient, error) {
	return newClient(raw, "")
}

// errSentinelPasswordNotSentinel: a Sentinel password with a URL that
// names no Sentinels.
var errSentinelPasswordNotSentinel = errors.New("a password for the Sentinels (GWSIM_SENTINEL_PASSWORD) is only for a redis+sentinel:// store")

// newClient is NewClient, giving the Sentinels of a redis+sentinel:// URL
// sentinelPassword; with any other URL a sentinelPassword is refused.
func newClient(raw, sentinelPassword string) (redis.UniversalClient, error) {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	if strings.HasPrefix(raw, SentinelScheme) {
		o, err := ParseSentinelURL(raw)
		if err != nil {
			return nil, err
		}
		o.SentinelPassword = sentinelPassword
		return redis.NewFailoverClient(o), nil
	}
	if sentinelPassword != "" {
		return nil, fmt.Errorf("%w, not %s", errSentinelPasswordNotSentinel, Redact(raw))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, fmt.Errorf("--store must be redis://HOST:PORT/DB, rediss://HOST:PORT/DB or redis+sentinel://HOST:PORT[,HOST:PORT…]/MASTER[/DB], not %s", Redact(raw))
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

// ParseSentinelURL reads redis+sentinel://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…]/MASTER[/DB]:
// the Sentinels' addresses, the name of the primary they watch, and the
// database. USER and PASSWORD are the data nodes' (the Sentinels' own
// password, when they require one, is Options.SentinelPassword). Errors
// never show the password.
func ParseSentinelURL(raw string) (*redis.FailoverOptions, error) {
	bad := func(why string) error {
		return fmt.Errorf("--store %s: %s; the form is redis+sentinel://HOST:PORT[,HOST:PORT…]/MASTER[/DB]", Redact(raw), why)
	}
	rest := strings.TrimPrefix(raw, SentinelScheme)
	if strings.Contains(rest, "?") {
		return nil, bad("takes no query parameters")
	}
	o := &redis.FailoverOptions{}
	hosts, path, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(hosts, "@"); at >= 0 {
		user, pw, _ := strings.Cut(hosts[:at], ":")
		var err error
		if o.Username, err = url.PathUnescape(user); err != nil {
			return nil, bad("the user name is not valid percent-encoding")
		}
		if o.Password, err = url.PathUnescape(pw); err != nil {
			return nil, bad("the password is not valid percent-encoding")
		}
		hosts = hosts[at+1:]
	}
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return nil, bad(fmt.Sprintf("%q is not HOST:PORT", h))
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, bad(fmt.Sprintf("%q has no valid port", h))
		}
		o.SentinelAddrs = append(o.SentinelAddrs, h)
	}
	parts := strings.Split(path, "/")
	if len(parts) > 2 || parts[0] == "" {
		return nil, bad("the name of the primary (MASTER) is missing")
	}
	o.MasterName = parts[0]
	if len(parts) == 2 && parts[1] != "" {
		db, err := strconv.Atoi(parts[1])
		if err != nil || db < 0 {
			return nil, bad(fmt.Sprintf("the database %q is not a number >= 0", parts[1]))
		}
		o.DB = db
	}
	return o, nil
}

var quietOnce sync.Once

// quiet drops go-redis's own log lines (dial retries): a lost Redis is
// reported once by our own code, without the URL.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// scrub removes the URL's password, and each of more (the Sentinels'
// password), from a message.
func scrub(msg, raw string, more ...string) string {
	if strings.HasPrefix(raw, SentinelScheme) {
		if o, err := ParseSentinelURL(raw); err == nil {
			more = append(more, o.Password)
		}
	} else if u, err := url.Parse(raw); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			more = append(more, p)
		}
	}
	for _, p := range more {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, "***")
		}
	}
	return msg
}

// scrubErr is err with o's passwords removed from its text: err itself
// when it held none, else a new error that does not wrap it (unwrapping
// would find the password again).
func (o Options) scrubErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := scrub(msg, o.URL, o.SentinelPassword); clean != msg {
		return errors.New(clean)
	}
	return err
}

// Open connects, and loads the fleet unless Redis holds it already (then
// the replica joins). A different fleet is ErrFleetMismatch unless
// Options.Reset. No error shows the URL's password or the Sentinels'.
func Open(ctx context.Context, f *fleet.Fleet, o Options) (*Store, error) {
	rdb, err := newClient(o.URL, o.SentinelPassword)
	if err != nil {
		return nil, o.scrubErr(err)
	}
	s, err := open(ctx, rdb, f, o)
	if err != nil {
		rdb.Close()
		return nil, o.scrubErr(err)
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
	// Checked before Redis is asked anything: a mistake is said at once.
	var wait time.Duration
	switch o.Durability {
	case "", DurabilityPrimary:
	case DurabilityReplicated:
		if _, cluster := rdb.(*redis.ClusterClient); cluster {
			return nil, errors.New("--store-durability replicated is not supported on a Redis Cluster (WAIT would reach one node of the pipeline only): use a primary with replicas, or redis+sentinel://")
		}
		wait = o.WaitTimeout
		if wait <= 0 {
			wait = DefaultWaitTimeout
		}
	default:
		return nil, fmt.Errorf("--store-durability must be primary or replicated, not %q", o.Durability)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := rdb.Ping(pctx).Err()
	cancel()
	if err != nil {
		// One line: the failover client joins each Sentinel's error with
		// newlines.
		why := strings.ReplaceAll(scrub(err.Error(), o.URL, o.SentinelPassword), "\n", "; ")
		return nil, fmt.Errorf("redis at %s cannot be reached: %s", Redact(o.URL), why)
	}
	h, err := fleetHash(f)
	if err != nil {
		return nil, err
	}
	if o.Index == nil {
		o.Index = store.NewIndex(f)
	}
	s := &Store{rdb: rdb, prefix: o.Prefix, replica: o.Replica, fleet: f, hash: h, index: o.Index,
		limit: o.MessageLimit, jsize: o.JournalSize, timeout: o.Timeout, wait: wait}
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
			return fmt.Errorf("redis: %s", scrub(err.Error(), o.URL, o.SentinelPassword))
		}
		if err == nil && !o.Reset {
			if have != s.hash {
				return fmt.Errorf("%w (fleet sha256 %.12s…, this one %.12s…): start with the same fleet, or with --store-reset to replace it (every replica's state is lost)", ErrFleetMismatch, have, s.hash)
			}
			return nil
		}
		got, err := s.rdb.SetNX(ctx, s.key("lock"), s.replica, 10*time.Minute).Result()
		if err != nil {
			return fmt.Errorf("redis: %s", scrub(err.Error(), o.URL, o.SentinelPassword))
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
			// The count of messages exists from the start: a message to
			// a gateway whose count is gone finds a Redis that lost its
			// data (see the message script).
			pipe.SetNX(ctx, s.totalKey(a.ID, g.MAC), 0, 0)
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

// Close closes the connections, once the journal entries still queued
// are written (or their writes timed out).
func (s *Store) Close() error { return s.close(3 * s.timeout) }

// Abandon closes the connections without waiting on the journal entries
// still queued: Redis does not answer, so they could not be written.
func (s *Store) Abandon() error { return s.close(0) }

func (s *Store) close(journalWait time.Duration) error {
	s.feedOnce.Do(func() {}) // no feed started after Close
	if s.feed != nil {
		s.feed.close()
	}
	s.updates.close()
	s.journal.close(journalWait)
	return s.rdb.Close()
}

// Client is the Redis client (for tests and benchmarks).
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Replica is this replica's name in journal entries.
func (s *Store) Replica() string { return s.replica }

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// writeCtx bounds a write: the call, and the WAIT after it.
func (s *Store) writeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout+s.wait)
}

// errNotReplicated: WAIT saw no replica take the write in time.
var errNotReplicated = errors.New("no replica confirmed the write in time")

// notReplicated is the answer to a change no replica confirmed: it is on
// the primary, and may or may not survive a failover, so it is not
// acknowledged.
func (s *Store) notReplicated() *device.Error {
	return device.Errorf(device.CodeStorageUnavailable, "",
		"the change reached the Redis primary but no replica confirmed it within %s (--store-durability replicated): it may or may not be kept; retry shortly", s.wait)
}

// unavailable is the error of a failed Redis call, in the words health,
// the log and every operation's 503 share for each state of the store:
// Redis's own refusal (a read-only replica, a primary short of its
// min-replicas-to-write, out of memory or unable to persist) named as
// such, anything else as Redis not reached in time. Nothing is
// acknowledged that Redis did not confirm. A call that reached Redis
// before the connection broke may have been applied, so the answer does
// not say that nothing was.
func unavailable(err error) *device.Error {
	if why := refusal(err); why != "" {
		return device.Errorf(device.CodeStorageUnavailable, "", "%s", why)
	}
	return device.Errorf(device.CodeStorageUnavailable, "", "the shared store (Redis) cannot be reached or did not answer in time; a change is not acknowledged (if Redis got it before the connection broke, it may still be applied); retry shortly")
}

// refusal says why Redis refused a call when it answered with a refusal,
// "" for any other failure.
func refusal(err error) string {
	if err == nil || !isReplyError(err) {
		return ""
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "READONLY"):
		return "no Redis primary: the Redis reached is a read-only replica (a failover under way, or --store names a replica); every change is refused until a primary is reached"
	case strings.HasPrefix(msg, "NOREPLICAS"):
		return "the Redis primary refuses writes: fewer good replicas than its min-replicas-to-write; every change is refused until a replica is back"
	case strings.HasPrefix(msg, "MISCONF"), strings.HasPrefix(msg, "OOM"):
		return fmt.Sprintf("the Redis primary refuses writes (%s); every change is refused until it takes them again", strings.SplitN(msg, " ", 2)[0])
	case strings.HasPrefix(msg, "LOADING"), strings.HasPrefix(msg, "MASTERDOWN"):
		return fmt.Sprintf("the Redis reached is not serving yet (%s: loading its data, or a replica without its primary); every change is refused until it serves", strings.SplitN(msg, " ", 2)[0])
	}
	return ""
}
