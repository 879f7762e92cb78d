package server

import (
	"net/netip"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/store"
)

// Backend is everything gwsim keeps beyond one request, each part behind
// the interface the handlers use: the state, the journal, replay
// protection, rate counts, faults, dashboard sessions, the event feed and
// the store's health. New fills each part left nil with its in-process
// implementation (the state in Config.Store, saved through Config.Durable
// when set), so the handlers never ask which backend they have. A shared
// backend such as package redisstore sets every part, so that any number
// of replicas serve one fleet.
type Backend struct {
	State   StateStore
	Journal JournalStore
	// Replays is asked with Config.RejectReplays only.
	Replays ReplayGuard
	// Rates is asked with Config.RateLimit above 0 only.
	Rates    RateCounter
	Faults   FaultStore
	Sessions SessionStore
	Changes  Changes
	Health   Health
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
