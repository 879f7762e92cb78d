package store

import "github.com/gwdmi/gwtools/gatewayapi/device"

// This file is what a state file (package persist) needs from the store:
// reads by account, which the admin views do not offer (they find a
// gateway by mac in any account), and loading a saved message log.

// MessageLimit is how many messages each gateway keeps.
func (s *Store) MessageLimit() int { return s.messageLimit }

// DeviceOf returns the type, state and name of a device of an account's
// gateway.
func (s *Store) DeviceOf(accountID, mac, sn string) (*device.Type, device.State, string, bool) {
	d := s.cur.Load()
	g, err := d.gateway(accountID, mac)
	if err != nil {
		return nil, device.State{}, "", false
	}
	pos, err := g.find(sn)
	if err != nil {
		return nil, device.State{}, "", false
	}
	rec := d.read(g, pos)
	return device.Types[rec.typ], rec.state, rec.name, true
}

// MessagesAfter returns the messages an account's gateway received after
// its first `after` that it still keeps, oldest first, and how many it
// received in all: message number total is the last one returned.
func (s *Store) MessagesAfter(accountID, mac string, after uint64) ([]Message, uint64, bool) {
	g, err := s.cur.Load().gateway(accountID, mac)
	if err != nil {
		return nil, 0, false
	}
	g.msgMu.Lock()
	defer g.msgMu.Unlock()
	n := 0
	if after < g.msgTotal {
		n = int(min(g.msgTotal-after, uint64(len(g.messages))))
	}
	out := make([]Message, n)
	// The newest is just before msgStart in the ring.
	for i := 0; i < n; i++ {
		out[n-1-i] = g.messages[(g.msgStart+len(g.messages)-1-i)%len(g.messages)]
	}
	return out, g.msgTotal, true
}

// RestoreMessages replaces the message log of an account's gateway with
// msgs (oldest first), of which only the newest MessageLimit are kept, and
// sets the number received in all to total (at least len(msgs)). It is for
// loading saved state before serving.
func (s *Store) RestoreMessages(accountID, mac string, msgs []Message, total uint64) *device.Error {
	g, err := s.cur.Load().gateway(accountID, mac)
	if err != nil {
		return err
	}
	if len(msgs) > s.messageLimit {
		msgs = msgs[len(msgs)-s.messageLimit:]
	}
	if total < uint64(len(msgs)) {
		total = uint64(len(msgs))
	}
	g.msgMu.Lock()
	defer g.msgMu.Unlock()
	g.messages = append(make([]Message, 0, len(msgs)), msgs...)
	g.msgStart = 0
	g.msgTotal = total
	return nil
}
