package store

import (
	"sort"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// Index is a fleet's structure, which never changes: its accounts, their
// gateways, each gateway's devices and their types, found by (account,
// mac, sn) in map reads and one probe of a compact sn index. It holds no
// state: the Store keeps state beside it, and a backend that keeps state
// elsewhere (package redisstore) checks requests against an Index alone.
// Safe for concurrent use.
type Index struct {
	fleet    *fleet.Fleet
	accounts map[string]*account
	order    []string
	// byMAC is each gateway address's first account's gateway.
	byMAC   map[string]*gateway
	gwOrder []*gateway
	devices int
}

type gateway struct {
	id      uint32 // position in Index.gwOrder; spreads the lock stripes
	mac     string
	account string
	// loaded are the gateway's devices as the fleet lists them, in the
	// order of devices; their sn strings are the index's keys.
	loaded []fleet.Device
	index  snIndex
	// types[pos] is the type ID of device pos.
	types []uint8
}

type account struct {
	id       string
	gateways map[string]*gateway
	order    []string
}

// NewIndex indexes a checked fleet (fleet.Check, or made by
// fleet.Generate: its hex identifiers are lower-case).
func NewIndex(f *fleet.Fleet) *Index {
	ix := &Index{fleet: f, accounts: map[string]*account{}, byMAC: map[string]*gateway{}}
	for _, fa := range f.Accounts {
		a := &account{id: fa.ID, gateways: make(map[string]*gateway, len(fa.Gateways))}
		ix.accounts[fa.ID] = a
		ix.order = append(ix.order, fa.ID)
		for _, fg := range fa.Gateways {
			g := &gateway{mac: fg.MAC, account: fa.ID, loaded: fg.Devices, index: newSNIndex(fg.Devices),
				types: make([]uint8, len(fg.Devices)), id: uint32(len(ix.gwOrder))}
			var t *device.Type
			for i := range fg.Devices {
				if t == nil || t.Name != fg.Devices[i].Type { // fleets often repeat a type
					t, _ = device.LookupType(fg.Devices[i].Type)
				}
				g.types[i] = t.ID
			}
			a.gateways[fg.MAC] = g
			a.order = append(a.order, fg.MAC)
			if _, dup := ix.byMAC[fg.MAC]; !dup {
				ix.byMAC[fg.MAC] = g
			}
			ix.gwOrder = append(ix.gwOrder, g)
			ix.devices += len(fg.Devices)
		}
	}
	return ix
}

// Fleet is the fleet indexed.
func (ix *Index) Fleet() *fleet.Fleet { return ix.fleet }

func (ix *Index) gateway(accountID, mac string) (*gateway, *device.Error) {
	if a, ok := ix.accounts[accountID]; ok {
		if g, ok := a.gateways[mac]; ok {
			return g, nil
		}
	}
	return nil, device.Errorf(device.CodeGatewayNotFound, device.FieldMAC, "account %s has no gateway %s", accountID, mac)
}

func (g *gateway) find(sn string) (uint32, *device.Error) {
	if pos, found := g.index.find(g.loaded, sn); found {
		return pos, nil
	}
	return 0, device.Errorf(device.CodeDeviceNotFound, device.FieldSN, "gateway %s has no device %s", g.mac, sn)
}

// HasGateway reports whether the account has the gateway.
func (ix *Index) HasGateway(accountID, mac string) bool {
	_, err := ix.gateway(accountID, mac)
	return err == nil
}

// Find is the type of an account's device, or the error a request to it
// answers: gateway_not_found or device_not_found.
func (ix *Index) Find(accountID, mac, sn string) (*device.Type, *device.Error) {
	g, err := ix.gateway(accountID, mac)
	if err != nil {
		return nil, err
	}
	pos, err := g.find(sn)
	if err != nil {
		return nil, err
	}
	return device.Types[g.types[pos]], nil
}

// Owner is the account a gateway address is found in by the admin views
// (the first that lists it), in any case.
func (ix *Index) Owner(mac string) (accountID string, ok bool) {
	g, ok := ix.byMAC[strings.ToLower(mac)]
	if !ok {
		return "", false
	}
	return g.account, true
}

// Counts is the size of the fleet.
func (ix *Index) Counts() (accounts, gateways, devices int) {
	return len(ix.accounts), len(ix.gwOrder), ix.devices
}

// MACs lists every gateway address, sorted.
func (ix *Index) MACs() []string {
	out := make([]string, 0, len(ix.byMAC))
	for mac := range ix.byMAC {
		out = append(out, mac)
	}
	sort.Strings(out)
	return out
}
