package server

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/store"
)

// Backend is everything gwsim keeps beyond one request, each part behind
// the interface the handlers use: the state, the journal, replay
// protection, rate counts, faults, dashboard sessions, the event feed and
// the store's health. New fills each part left nil with its in-process
// implementation (the state: MemoryState of Config.Store), so the handlers
// never ask which backend they have. A shared backend such as package
// redisstore sets every part, so that any number of replicas serve one
// fleet.
//
// A backend is opened by an OpenBackend function (OpenMemory here,
// persist.OpenBackend, redisstore.OpenBackend), chosen by the --store URL
// in one place (package simulator, backends.go).
type Backend struct {
	State   StateStore
	Journal JournalStore
	// Replays is asked with Config.RejectReplays only.
	Replays ReplayGuard
	// Rates is asked with Config.RateLimit above 0 only.
	Rates RateCounter
	// Guesses counts wrong admin tokens per client (BearerLimiter).
	Guesses  GuessCounter
	Faults   FaultStore
	Sessions SessionStore
	Changes  Changes
	Health   Health

	// What the program around the server uses; the server never reads
	// these.

	// ClientReports, when set, is where the replicas share the client
	// report (package clients); nil: each process keeps its own.
	ClientReports clients.Shared

	// Describe says where the state is kept, for gwsim's banner (never a
	// password); "" for the process's own memory.
	Describe string
	// Close, when set, ends the backend once the server has stopped.
	Close func() error
	// Reachable, when set, asks the store once whether it answers (nil
	// when it does). At shutdown a store that does not is closed with
	// Abandon, and the client report gets no last fold.
	Reachable func(ctx context.Context) error
	// Abandon, when set with Reachable, ends the backend without waiting
	// on what it still had to write (it cannot be written).
	Abandon func() error
	// PauseWrites, when set, makes the store refuse every change, of every
	// replica, for d, or ends that early when d is 0 (a scenario's
	// redis_loss steps). Nil: the store cannot be paused.
	PauseWrites func(ctx context.Context, d time.Duration) error
	// Local is the state when the process keeps it in its own memory
	// (memory and file), for tests and tools that read it directly; nil
	// when it is kept elsewhere.
	Local *store.Store
}

// BackendOptions are what every backend is opened with: gwsim's flags.
type BackendOptions struct {
	// URL is the whole --store URL; its scheme chose the backend.
	URL string
	// SentinelPassword is the Sentinels' own password, for a backend
	// that follows Redis Sentinel (simulator.Build refuses it with any
	// other store).
	SentinelPassword string
	Fleet            *fleet.Fleet
	// Reset (--store-reset) replaces the state the store holds, even of
	// another fleet. A backend that holds nothing across processes
	// refuses it (CheckBackendOptions).
	Reset bool
	// Replicated (--store-durability replicated) acknowledges a change
	// only once a replica of the store has it; refused by a backend that
	// has no replicas.
	Replicated bool
	// Replica names this process in what it writes (host-pid).
	Replica string
	// MessageLimit and JournalSize bound each gateway's message log and
	// the journal (0: the defaults).
	MessageLimit, JournalSize int
	// Window is the authenticator's timestamp window: how long a replay
	// must be remembered.
	Window time.Duration
	Logger *slog.Logger
}

// OpenBackend opens one kind of backend.
type OpenBackend func(ctx context.Context, o BackendOptions) (Backend, error)

// ErrResetUnsupported and ErrReplicatedUnsupported: the backend has no
// use for --store-reset, or no replicas for --store-durability replicated.
var (
	ErrResetUnsupported      = errors.New("--store-reset needs a Redis --store: it empties gwsim's keys there")
	ErrReplicatedUnsupported = errors.New("--store-durability replicated needs a Redis --store that has replicas")
)

// InProcessOnly refuses the options that only a store shared across
// processes takes: for backends whose state is this process's.
func (o BackendOptions) InProcessOnly() error {
	if o.Reset {
		return ErrResetUnsupported
	}
	if o.Replicated {
		return ErrReplicatedUnsupported
	}
	return nil
}

// OpenMemory is the backend of --store memory: (the default): everything
// in this process, gone when it ends.
func OpenMemory(_ context.Context, o BackendOptions) (Backend, error) {
	if err := o.InProcessOnly(); err != nil {
		return Backend{}, err
	}
	st := store.New(o.Fleet, o.MessageLimit)
	return Backend{State: MemoryState(st), Local: st}, nil
}

// StateStore is the fleet's changing state as the handlers use it. Every
// method can fail with CodeStorageUnavailable when the state lives
// elsewhere and cannot be reached; then the change is not acknowledged
// (a store lost mid-write may still have applied it).
type StateStore interface {
	HasGateway(accountID, mac string) (bool, *device.Error)
	Command(accountID, mac, sn string, t *device.Type, settings []device.Setting) *device.Error
	Rename(accountID, mac, sn, name string) *device.Error
	Message(accountID, mac string, m store.Message) *device.Error
	Device(mac, sn string) (store.DeviceView, bool, *device.Error)
	Messages(mac string) ([]store.Message, uint64, bool, *device.Error)
	Dump(maxDevices int) ([]store.AccountView, bool, *device.Error)
	Counts() (accounts, gateways, devices int)
	Reset() *device.Error
}

// JournalStore keeps the request journal. *Journal is the in-memory one.
// A shared journal's Read shows every replica's entries.
type JournalStore interface {
	Add(Entry)
	// Read returns up to n entries (n <= 0: all kept), oldest first, and
	// how many were ever added; a journal that cannot be read says so
	// rather than answer none.
	Read(n int) ([]Entry, uint64, *device.Error)
	Clear()
}

// ReplayGuard remembers authenticated envelopes: Seen reports whether
// this one was seen before, and remembers it.
type ReplayGuard interface {
	Seen(e *device.Envelope, now time.Time) (bool, *device.Error)
}

// RateCounter counts one request of a client against limit a second: ok,
// or how long until it may send again.
type RateCounter interface {
	Allow(client netip.Addr, limit int) (ok bool, wait time.Duration, derr *device.Error)
}

// FaultStore keeps the faults as the whole JSON of Faults (so fields
// added to Faults ride along) where every replica reads them: Save before
// a change is acknowledged, Load every FaultsPoll. The in-process one
// keeps nothing (Load answers nothing): the server's own copy is all.
type FaultStore interface {
	Load() ([]byte, *device.Error)
	Save([]byte) *device.Error
}

// FaultsPoll is how often a replica reads the faults of its FaultStore.
const FaultsPoll = 200 * time.Millisecond

// MemoryState is the in-memory store as a StateStore: every method
// succeeds or fails as the store does, never for storage.
func MemoryState(st *store.Store) StateStore { return memStore{st} }

// memStore is the in-memory store behind StateStore.
type memStore struct{ s *store.Store }

func (m memStore) HasGateway(a, mac string) (bool, *device.Error) { return m.s.HasGateway(a, mac), nil }
func (m memStore) Command(a, mac, sn string, t *device.Type, st []device.Setting) *device.Error {
	return m.s.Command(a, mac, sn, t, st)
}
func (m memStore) Rename(a, mac, sn, name string) *device.Error { return m.s.Rename(a, mac, sn, name) }
func (m memStore) Message(a, mac string, msg store.Message) *device.Error {
	return m.s.Message(a, mac, msg)
}
func (m memStore) Device(mac, sn string) (store.DeviceView, bool, *device.Error) {
	d, ok := m.s.Device(mac, sn)
	return d, ok, nil
}
func (m memStore) Messages(mac string) ([]store.Message, uint64, bool, *device.Error) {
	msgs, total, ok := m.s.Messages(mac)
	return msgs, total, ok, nil
}
func (m memStore) Dump(n int) ([]store.AccountView, bool, *device.Error) {
	a, t := m.s.Dump(n)
	return a, t, nil
}
func (m memStore) Counts() (int, int, int) { return m.s.Counts() }
func (m memStore) Reset() *device.Error    { m.s.Reset(); return nil }

// memReplays is the in-process ReplayGuard.
type memReplays struct{ c *replayCache }

// Forget takes back a request the store refused after Seen.
func (m memReplays) Forget(e *device.Envelope) { m.c.forget(e) }

func (m memReplays) Seen(e *device.Envelope, now time.Time) (bool, *device.Error) {
	return m.c.seen(e, now), nil
}

// memRates is the in-process RateCounter: a token bucket per client, made
// for one limit.
type memRates struct{ l *rateLimiter }

func (m memRates) Allow(client netip.Addr, _ int) (bool, time.Duration, *device.Error) {
	ok, wait := m.l.allow(client)
	return ok, wait, nil
}

// memFaults is the in-process FaultStore: the server's own copy is all.
type memFaults struct{}

func (memFaults) Load() ([]byte, *device.Error) { return nil, nil }
func (memFaults) Save([]byte) *device.Error     { return nil }
