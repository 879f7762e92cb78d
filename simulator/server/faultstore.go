package server

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// setFaults replaces the faults: in the FaultStore first (so that a
// change no replica can see is not acknowledged), then here.
func (s *Server) setFaults(f Faults) *device.Error {
	b, err := json.Marshal(f)
	if err != nil {
		return device.Errorf(device.CodeMalformedBody, "", "faults: %v", err)
	}
	if derr := s.faultStore.Save(b); derr != nil {
		return derr
	}
	s.faults.set(f)
	return nil
}

// pollFaults reads the shared faults and applies them when they changed.
func (s *Server) pollFaults() {
	b, derr := s.faultStore.Load()
	if derr != nil || len(b) == 0 || bytes.Equal(b, s.polled) {
		return
	}
	var f Faults
	if err := json.Unmarshal(b, &f); err != nil || f.check() != nil {
		s.log.Warn("shared faults could not be read; keeping the current ones", "err", err)
		return
	}
	s.polled = append(s.polled[:0], b...)
	s.faults.set(f)
}

// startFaultPoll follows the FaultStore's faults, so that PUT
// /_sim/faults on one replica applies to all within FaultsPoll.
func (s *Server) startFaultPoll() {
	s.pollFaults()
	every := FaultsPoll
	stop := make(chan struct{})
	s.stopPoll = stop
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.pollFaults()
			}
		}
	}()
}
