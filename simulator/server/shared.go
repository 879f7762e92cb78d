package server

import (
	"net/netip"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/store"
)

// The seams below are what the handlers need from the state, the journal,
// replay protection, the rate limiter and the faults. The in-memory
// implementations (store.Store wrapped by memStore, Journal, replayCache,
// rateLimiter, faultState) are the default; a shared backend such as
// package redisstore plugs in through Config.Shared so that any number of
// replicas serve one fleet.

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

// Shared is state kept outside the process and shared by replicas. Each
// field replaces its in-memory counterpart; Health says whether it can be
// reached.
type Shared struct {
	Store   StateStore
	Journal JournalStore
	// Replays reports whether an authenticated envelope was seen before
	// (only used with Config.RejectReplays).
	Replays func(e *device.Envelope, now time.Time) (bool, *device.Error)
	// Allow counts one request of a client against limit a second.
	Allow func(client netip.Addr, limit int) (bool, time.Duration, *device.Error)
	// LoadFaults and SaveFaults keep the whole JSON of Faults, so fields
	// added to Faults ride along.
	LoadFaults func() ([]byte, *device.Error)
	SaveFaults func([]byte) *device.Error
	// FaultsPoll is how often a replica reads the shared faults.
	FaultsPoll time.Duration
}

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
