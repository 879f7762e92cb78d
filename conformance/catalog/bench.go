package catalog

import (
	"hash/fnv"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Bench is what the checks' requests are built against.
type Bench struct {
	Fleet  *fleet.Fleet
	Target *fleet.Target
	Client *client.Client
	// Signer signs with the target's scheme; KnownSign says whether a wrong
	// sign can be told from a right one (md5 or a sign command).
	Signer    client.Signer
	KnownSign bool
	Location  *time.Location
	Seed      int64
	// Now is the clock for timestamps.
	Now func() time.Time
	// Worker is this process's worker number and Workers how many there
	// are in a --parallel run (0 and 1 when serial).
	Worker, Workers int
	// msgSeq numbers the valid messages of the run (Base), and msgTag,
	// made once from the clock, tells them from an earlier run's.
	msgSeq  atomic.Int64
	msgOnce sync.Once
	msgTag  string
	// picks holds a field's samples derived from one value, by slug
	// (Bench.Pick).
	picksMu sync.Mutex
	picks   map[pickKey]map[string]oracle.Sample
}

// Faker gives a check its own reproducible stream of values: the same run
// seed and check ID draw the same values whatever else ran before.
func (b *Bench) Faker(id string) *gofakeit.Faker {
	h := fnv.New64a()
	io.WriteString(h, id)
	return gofakeit.New(b.Seed ^ int64(h.Sum64()))
}

// Device returns the fleet's Device of a type, if the target has one.
func (b *Bench) Device(typeName string) (fleet.Device, bool) {
	d, ok := b.Target.Devices[typeName]
	return d, ok
}

// AnyDevice is a device for checks about the envelope rather than a type:
// the first type in published order that the fleet has.
func (b *Bench) AnyDevice() (fleet.Device, bool) {
	for _, t := range device.Types {
		if d, ok := b.Target.Devices[t.Name]; ok {
			return d, true
		}
	}
	return fleet.Device{}, false
}

// DeviceName is a device of the fleet by type and serial. It reads the
// fleet, never b.Target (a check may set that to a stand-in while the
// progress line is written).
func (b *Bench) DeviceName(sn string) string {
	if d, ok := b.FleetDevice(sn); ok {
		return d.Type + " " + d.SN
	}
	return sn
}

// FleetDevice is the fleet's device of a serial (HexOnly).
func (b *Bench) FleetDevice(sn string) (fleet.Device, bool) {
	if b.Fleet != nil {
		for _, a := range b.Fleet.Accounts {
			for _, g := range a.Gateways {
				for _, d := range g.Devices {
					if HexOnly(d.SN) == sn {
						return d, true
					}
				}
			}
		}
	}
	return fleet.Device{}, false
}
