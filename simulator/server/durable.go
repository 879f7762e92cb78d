package server

import (
	"log/slog"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/store"
)

// Durable makes applied changes last beyond the process: a state file
// (package persist). The server syncs each change before it answers 200,
// so an acknowledged change is never lost.
type Durable interface {
	// SyncDevice makes the device's current state and name durable.
	SyncDevice(accountID, mac, sn string) error
	// SyncMessages makes the gateway's message log durable.
	SyncMessages(accountID, mac string) error
	// Reset runs reset (the store's) and drops the saved state, as one step.
	Reset(reset func()) error
}

// durableStore is the in-memory state saved through a Durable after each
// change: a failure to save answers 503 storage_failed (the change is
// applied in memory but may not survive a restart, so it is not
// acknowledged).
type durableStore struct {
	memStore
	d   Durable
	log *slog.Logger
}

func (s durableStore) saved(err error, mac, sn string) *device.Error {
	if err == nil {
		return nil
	}
	s.log.Error("state file: a change could not be saved", "err", err, "mac", mac, "sn", sn)
	return device.Errorf(device.CodeStorageFailed, "", "the change could not be saved to the state file; it may be lost on restart")
}

func (s durableStore) Command(a, mac, sn string, t *device.Type, st []device.Setting) *device.Error {
	if derr := s.memStore.Command(a, mac, sn, t, st); derr != nil {
		return derr
	}
	return s.saved(s.d.SyncDevice(a, mac, sn), mac, sn)
}

func (s durableStore) Rename(a, mac, sn, name string) *device.Error {
	if derr := s.memStore.Rename(a, mac, sn, name); derr != nil {
		return derr
	}
	return s.saved(s.d.SyncDevice(a, mac, sn), mac, sn)
}

func (s durableStore) Message(a, mac string, m store.Message) *device.Error {
	if derr := s.memStore.Message(a, mac, m); derr != nil {
		return derr
	}
	return s.saved(s.d.SyncMessages(a, mac), mac, "")
}

// Reset puts the fleet back as loaded and empties the state file.
func (s durableStore) Reset() *device.Error {
	if err := s.d.Reset(s.memStore.s.Reset); err != nil {
		s.log.Error("reset: the state file could not be emptied", "err", err)
		return device.Errorf(device.CodeStorageFailed, "", "the state was reset in memory but the state file could not be emptied: %v", err)
	}
	return nil
}
