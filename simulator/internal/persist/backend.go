package persist

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/store"
)

// Scheme starts the --store URL of a state file: file:PATH.
const Scheme = "file:"

// OpenBackend is the backend of --store file:PATH (--state-file PATH):
// the state in this process's memory, each change saved to the file
// before it is acknowledged; the rest (journal, sessions…) in the process.
func OpenBackend(_ context.Context, o server.BackendOptions) (server.Backend, error) {
	if err := o.InProcessOnly(); err != nil {
		return server.Backend{}, err
	}
	path := strings.TrimPrefix(o.URL, Scheme)
	if path == "" {
		return server.Backend{}, errors.New("--store file:PATH needs the state file's path")
	}
	st := store.New(o.Fleet, o.MessageLimit)
	f, err := Open(path, st)
	if err != nil {
		return server.Backend{}, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return server.Backend{State: durable{server.MemoryState(st), st, f, log}, Local: st,
		Describe: "state file " + path, Close: f.Close}, nil
}

// syncer makes applied changes last: *File.
type syncer interface {
	// SyncDevice makes the device's current state and name durable.
	SyncDevice(accountID, mac, sn string) error
	// SyncMessages makes the gateway's message log durable.
	SyncMessages(accountID, mac string) error
	// Reset runs reset (the store's) and drops the saved state, as one step.
	Reset(reset func()) error
}

// durable is the in-memory state saved through a syncer after each
// change: a failure to save answers 503 storage_failed (the change is
// applied in memory but may not survive a restart, so it is not
// acknowledged).
type durable struct {
	server.StateStore
	st  *store.Store
	d   syncer
	log *slog.Logger
}

func (s durable) saved(err error, mac, sn string) *device.Error {
	if err == nil {
		return nil
	}
	s.log.Error("state file: a change could not be saved", "err", err, "mac", mac, "sn", sn)
	return device.Errorf(device.CodeStorageFailed, "", "the change could not be saved to the state file; it may be lost on restart")
}

func (s durable) Command(a, mac, sn string, t *device.Type, st []device.Setting) *device.Error {
	if derr := s.StateStore.Command(a, mac, sn, t, st); derr != nil {
		return derr
	}
	return s.saved(s.d.SyncDevice(a, mac, sn), mac, sn)
}

func (s durable) Rename(a, mac, sn, name string) *device.Error {
	if derr := s.StateStore.Rename(a, mac, sn, name); derr != nil {
		return derr
	}
	return s.saved(s.d.SyncDevice(a, mac, sn), mac, sn)
}

func (s durable) Message(a, mac string, m store.Message) *device.Error {
	if derr := s.StateStore.Message(a, mac, m); derr != nil {
		return derr
	}
	return s.saved(s.d.SyncMessages(a, mac), mac, "")
}

// Reset puts the fleet back as loaded and empties the state file.
func (s durable) Reset() *device.Error {
	if err := s.d.Reset(s.st.Reset); err != nil {
		s.log.Error("reset: the state file could not be emptied", "err", err)
		return device.Errorf(device.CodeStorageFailed, "", "the state was reset in memory but the state file could not be emptied: %v", err)
	}
	return nil
}
