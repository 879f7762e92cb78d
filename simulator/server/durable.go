package server

import (
	"github.com/gwdmi/gwtools/gatewayapi/device"
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

// sync makes the change a request just applied durable; a failure answers
// 503 storage_failed: the change is applied in memory but may not survive a
// restart, so it is not acknowledged.
func (s *Server) sync(op device.Operation, req *device.Request) *device.Error {
	d := s.cfg.Durable
	var err error
	switch op {
	case device.SendCommand, device.UpdateName:
		err = d.SyncDevice(req.AccountID, req.MAC, req.SN)
	case device.SendMessage:
		err = d.SyncMessages(req.AccountID, req.MAC)
	}
	if err != nil {
		s.log.Error("state file: a change could not be saved", "err", err, "mac", req.MAC, "sn", req.SN)
		return device.Errorf(device.CodeStorageFailed, "", "the change could not be saved to the state file; it may be lost on restart")
	}
	return nil
}

// reset puts the fleet back as loaded, the saved state too.
func (s *Server) reset() error {
	if s.cfg.Shared != nil {
		if derr := s.store.Reset(); derr != nil {
			return derr
		}
		return nil
	}
	if s.cfg.Durable == nil {
		s.cfg.Store.Reset()
		return nil
	}
	return s.cfg.Durable.Reset(s.cfg.Store.Reset)
}
