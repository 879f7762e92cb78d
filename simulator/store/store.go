// Package store keeps the simulated fleet in memory: accounts, gateways,
// devices with their type, name and state, and the messages each gateway
// received. Lookups by (account, mac, sn) are map reads and one probe of a
// compact hash index (index.go) on a structure that does not change after
// loading; each device is guarded by one of many striped locks, so requests
// to different devices do not wait on each other and a device's update is
// atomic. The fleet must have been checked (fleet.Check, or made by
// fleet.Generate): its hex identifiers are lower-case.
package store

import (
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// stripes is the number of device locks; a power of two.
const stripes = 1024

// DefaultMessageLimit is how many messages a gateway keeps, newest last.
const DefaultMessageLimit = 1000

// SN is a device serial number in binary form: half the memory of its hex.
type SN [16]byte

// ParseSN reads 32 hex characters.
func ParseSN(s string) (SN, bool) {
	var sn SN
	if len(s) != 32 {
		return sn, false
	}
	_, err := hex.Decode(sn[:], []byte(s))
	return sn, err == nil
}

func (sn SN) String() string { return hex.EncodeToString(sn[:]) }

// record is one device's changing part. A device holds one only once it
// differs from the fleet (data.changed): an untouched device costs its
// type byte and its slot in the sn index, because fleets reach millions.
// Its sn is the fleet's (gateway.loaded), not repeated here.
type record struct {
	name  string
	state device.State
	typ   uint8
}

// Message is one message a gateway received.
type Message struct {
	Time  time.Time `json:"time"`
	Type  string    `json:"message_type"`
	Value string    `json:"message_value"`
}

// msgLog is the message log of one gateway.
type msgLog struct {
	mu       sync.Mutex
	messages []Message // ring of at most limit
	start    int
	total    uint64
}

// data is the changing part of one loaded fleet; Reset swaps in a new
// one. The fleet's structure is the Index, which never changes.
type data struct {
	logs  []msgLog // by gateway id
	locks [stripes]sync.Mutex
	// changed[h] holds the records of the devices whose lock is locks[h]
	// and that differ from the fleet as loaded, by key(g, pos); guarded
	// by locks[h]; nil until the first.
	changed [stripes]map[uint64]*record
}

func key(g *gateway, pos uint32) uint64 { return uint64(g.id)<<32 | uint64(pos) }

// Store is the in-memory fleet. All methods are safe for concurrent use.
type Store struct {
	ix           *Index
	messageLimit int
	cur          atomic.Pointer[data]
}

// New loads a fleet. messageLimit bounds each gateway's message log
// (DefaultMessageLimit when 0).
func New(f *fleet.Fleet, messageLimit int) *Store {
	if messageLimit <= 0 {
		messageLimit = DefaultMessageLimit
	}
	s := &Store{ix: NewIndex(f), messageLimit: messageLimit}
	s.cur.Store(s.load())
	return s
}

// load is the fleet's state as the fleet file gives it, and no messages.
func (s *Store) load() *data {
	d := &data{logs: make([]msgLog, len(s.ix.gwOrder))}
	for _, g := range s.ix.gwOrder {
		for i := range g.loaded {
			fd := &g.loaded[i]
			if len(fd.State) == 0 {
				continue
			}
			t := device.Types[g.types[i]]
			st, _ := t.ParseState(fd.State) // the fleet was checked on load
			if st != t.DefaultState() {
				d.set(g, uint32(i), &record{typ: t.ID, name: fd.Name, state: st})
			}
		}
	}
	return d
}

// Reset puts the fleet back as it was loaded.
func (s *Store) Reset() { s.cur.Store(s.load()) }

// Fleet is the fleet the store was loaded from.
func (s *Store) Fleet() *fleet.Fleet { return s.ix.fleet }

// Index is the fleet's structure the store serves.
func (s *Store) Index() *Index { return s.ix }

func stripe(g *gateway, pos uint32) uint32 { return (g.id*2654435761 + pos) & (stripes - 1) }

func (d *data) lock(g *gateway, pos uint32) *sync.Mutex { return &d.locks[stripe(g, pos)] }

// get is a device's record: its change, or the fleet's as loaded. The
// device's lock must be held.
func (d *data) get(g *gateway, pos uint32) record {
	if rec, ok := d.changed[stripe(g, pos)][key(g, pos)]; ok {
		return *rec
	}
	t := device.Types[g.types[pos]]
	return record{typ: t.ID, name: g.loaded[pos].Name, state: t.DefaultState()}
}

// set keeps a device's changed record. The device's lock must be held.
func (d *data) set(g *gateway, pos uint32, rec *record) {
	h := stripe(g, pos)
	if d.changed[h] == nil {
		d.changed[h] = map[uint64]*record{}
	}
	d.changed[h][key(g, pos)] = rec
}

// HasGateway reports whether the account has the gateway.
func (s *Store) HasGateway(accountID, mac string) bool {
	return s.ix.HasGateway(accountID, mac)
}

// Command applies a validated command to a device: all its settings or,
// when the device is missing or of another type, none.
func (s *Store) Command(accountID, mac, sn string, t *device.Type, settings []device.Setting) *device.Error {
	return s.update(accountID, mac, sn, func(rec *record) *device.Error {
		if rec.typ != t.ID {
			return device.Errorf(device.CodeTypeMismatch, device.FieldType, "device %s is %s, not %s",
				sn, device.A(device.Types[rec.typ].Name), device.A(t.Name))
		}
		rec.state = t.Apply(rec.state, settings...)
		return nil
	})
}

// Rename sets a device's display name.
func (s *Store) Rename(accountID, mac, sn, name string) *device.Error {
	return s.update(accountID, mac, sn, func(rec *record) *device.Error {
		rec.name = name
		return nil
	})
}

// update runs fn on an account's device with the device's lock held, so
// that a change is applied whole or, when fn refuses it, not at all: fn
// must leave the record as it was when it returns an error. A device
// changed before is changed in place, without allocating.
func (s *Store) update(accountID, mac, sn string, fn func(*record) *device.Error) *device.Error {
	d := s.cur.Load()
	g, err := s.ix.gateway(accountID, mac)
	if err != nil {
		return err
	}
	pos, err := g.find(sn)
	if err != nil {
		return err
	}
	mu := d.lock(g, pos)
	mu.Lock()
	defer mu.Unlock()
	if rec, ok := d.changed[stripe(g, pos)][key(g, pos)]; ok {
		return fn(rec)
	}
	rec := d.get(g, pos)
	if err := fn(&rec); err != nil {
		return err
	}
	d.set(g, pos, &rec)
	return nil
}

// read returns a copy of a device's record, taken under its lock.
func (d *data) read(g *gateway, pos uint32) record {
	mu := d.lock(g, pos)
	mu.Lock()
	defer mu.Unlock()
	return d.get(g, pos)
}

// Message records a message received by a gateway.
func (s *Store) Message(accountID, mac string, m Message) *device.Error {
	g, err := s.ix.gateway(accountID, mac)
	if err != nil {
		return err
	}
	l := &s.cur.Load().logs[g.id]
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.messages) < s.messageLimit {
		l.messages = append(l.messages, m)
	} else {
		l.messages[l.start] = m
		l.start = (l.start + 1) % len(l.messages)
	}
	l.total++
	return nil
}

// DeviceView is a device as the admin API shows it.
type DeviceView struct {
	SN    string         `json:"sn"`
	Type  string         `json:"type"`
	Name  string         `json:"name"`
	State map[string]any `json:"state"`
}

func (d *data) view(g *gateway, pos uint32) DeviceView {
	rec := d.read(g, pos)
	t := device.Types[rec.typ]
	return DeviceView{SN: g.loaded[pos].SN, Type: t.Name, Name: rec.name, State: t.StateMap(rec.state)}
}

// Device returns one device by gateway mac (in any account) and sn.
func (s *Store) Device(mac, sn string) (DeviceView, bool) {
	d := s.cur.Load()
	g, ok := s.ix.byMAC[strings.ToLower(mac)]
	if !ok {
		return DeviceView{}, false
	}
	pos, err := g.find(strings.ToLower(sn))
	if err != nil {
		return DeviceView{}, false
	}
	return d.view(g, pos), true
}

// Messages returns the messages a gateway received, oldest first, and how
// many it received in all (older ones beyond the limit are dropped).
func (s *Store) Messages(mac string) ([]Message, uint64, bool) {
	g, ok := s.ix.byMAC[strings.ToLower(mac)]
	if !ok {
		return nil, 0, false
	}
	return s.cur.Load().messagesOf(g)
}

// GatewayView is a gateway in a state dump.
type GatewayView struct {
	MAC           string       `json:"mac"`
	Devices       []DeviceView `json:"devices"`
	Messages      []Message    `json:"messages"`
	MessagesTotal uint64       `json:"messages_total"`
}

// AccountView is an account in a state dump.
type AccountView struct {
	ID       string        `json:"myservice_id"`
	Gateways []GatewayView `json:"gateways"`
}

// Dump is every account, gateway, device and message log. maxDevices > 0
// stops after that many devices (Truncated says so), for huge fleets.
func (s *Store) Dump(maxDevices int) (accounts []AccountView, truncated bool) {
	d := s.cur.Load()
	n := 0
	for _, id := range s.ix.order {
		a := s.ix.accounts[id]
		av := AccountView{ID: id, Gateways: []GatewayView{}}
		for _, mac := range a.order {
			g := a.gateways[mac]
			gv := GatewayView{MAC: mac, Devices: make([]DeviceView, 0, len(g.types))}
			for pos := range g.types {
				if maxDevices > 0 && n >= maxDevices {
					truncated = true
					break
				}
				gv.Devices = append(gv.Devices, d.view(g, uint32(pos)))
				n++
			}
			gv.Messages, gv.MessagesTotal, _ = d.messagesOf(g)
			av.Gateways = append(av.Gateways, gv)
		}
		accounts = append(accounts, av)
	}
	return accounts, truncated
}

func (d *data) messagesOf(g *gateway) ([]Message, uint64, bool) {
	l := &d.logs[g.id]
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Message, 0, len(l.messages))
	out = append(out, l.messages[l.start:]...)
	out = append(out, l.messages[:l.start]...)
	return out, l.total, true
}

// Counts is the size of the fleet.
func (s *Store) Counts() (accounts, gateways, devices int) { return s.ix.Counts() }

// MACs lists every gateway address, sorted.
func (s *Store) MACs() []string { return s.ix.MACs() }
