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
	g, err := s.ix.gateway(accountID, mac)
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
	g, err := s.ix.gateway(accountID, mac)
	if err != nil {
		return nil, 0, false
	}
	l := &s.cur.Load().logs[g.id]
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	if after < l.total {
		n = int(min(l.total-after, uint64(len(l.messages))))
	}
	out := make([]Message, n)
	// The newest is just before start in the ring.
	for i := 0; i < n; i++ {
		out[n-1-i] = l.messages[(l.start+len(l.messages)-1-i)%len(l.messages)]
	}
	return out, l.total, true
}

// RestoreMessages replaces the message log of an account's gateway with
// msgs (oldest first), of which only the newest MessageLimit are kept, and
// sets the number received in all to total (at least len(msgs)). It is for
// loading saved state before serving.
func (s *Store) RestoreMessages(accountID, mac string, msgs []Message, total uint64) *device.Error {
	g, err := s.ix.gateway(accountID, mac)
	if err != nil {
		return err
	}
	if len(msgs) > s.messageLimit {
		msgs = msgs[len(msgs)-s.messageLimit:]
	}
	if total < uint64(len(msgs)) {
		total = uint64(len(msgs))
	}
	l := &s.cur.Load().logs[g.id]
	l.mu.Lock()
	defer l.mu.Unlock()
	l.messages = append(make([]Message, 0, len(msgs)), msgs...)
	l.start = 0
	l.total = total
	return nil
}
