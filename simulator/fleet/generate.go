package fleet

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/simulator/device"
)

var rooms = []string{"Kitchen", "Hall", "Living Room", "Bedroom", "Office", "Garage", "Porch", "Garden",
	"Bathroom", "Attic", "Basement", "Nursery", "Study", "Dining Room", "Patio", "Laundry"}

// nouns are what people call each type of device.
var nouns = map[string][]string{
	"Appliance Module":      {"Kettle", "Coffee Maker", "Fan", "Heater", "Lamp", "Radio"},
	"Appliance Module Plus": {"Pump", "Sprinkler", "Boiler", "Pool Filter", "Water Heater"},
	"Relay Module":          {"Door", "Gate", "Blinds", "Shutter", "Chime"},
	"Thermostat":            {"Thermostat", "Climate", "Heating", "AC"},
	"Infrared Sensor":       {"TV Remote", "IR Blaster", "Projector", "Soundbar"},
	"Light Dimmer":          {"Light", "Ceiling Light", "Spots", "Lamp", "Strip"},
}

// Generate builds a fleet from a seed: one account with one api key, the
// given number of gateways and devices per gateway, types mixed, names like
// "Kitchen Light", "Emma's Lamp" or "Bedroom Fan 2". The same seed, 0
// included, gives the same fleet. A million devices take about a second.
func Generate(seed int64, gateways, perGateway int) *Fleet {
	// Unlocked and seeded as given: gofakeit.New would take a random seed
	// for 0 and lock a mutex on every draw.
	fake := gofakeit.NewCustom(rand.NewSource(seed).(rand.Source64))
	a := Account{
		ID:      hexOf(fake, 24),
		APIKeys: []APIKey{{Key: "key-" + hexOf(fake, 16), Secret: fake.Password(true, true, true, false, false, 24)}},
	}
	a.Gateways = make([]Gateway, 0, gateways)
	macs := make(map[string]bool, gateways)
	for len(a.Gateways) < gateways {
		mac := hexOf(fake, 12)
		if macs[mac] {
			continue
		}
		macs[mac] = true
		g := Gateway{MAC: mac, Devices: make([]Device, 0, perGateway)}
		sns := make(map[string]bool, perGateway)
		for len(g.Devices) < perGateway {
			sn := hexOf(fake, 32)
			if sns[sn] {
				continue
			}
			sns[sn] = true
			t := device.Types[fake.Number(0, len(device.Types)-1)]
			g.Devices = append(g.Devices, Device{SN: sn, Type: t.Name, Name: deviceName(fake, t.Name)})
		}
		a.Gateways = append(a.Gateways, g)
	}
	return &Fleet{Sign: "md5", Accounts: []Account{a}}
}

// deviceName is a name people give a device of the type: mostly the room
// and what it is, sometimes whose it is, sometimes numbered.
func deviceName(fake *gofakeit.Faker, typ string) string {
	n := nouns[typ]
	noun := n[fake.Number(0, len(n)-1)]
	switch r := fake.Number(0, 9); {
	case r < 2:
		return fake.FirstName() + "'s " + noun
	case r < 4:
		return rooms[fake.Number(0, len(rooms)-1)] + " " + noun + " " + strconv.Itoa(fake.Number(2, 4))
	default:
		return rooms[fake.Number(0, len(rooms)-1)] + " " + noun
	}
}

const hexDigits = "0123456789abcdef"

// hexOf is n random lower-case hex digits, 16 to a draw.
func hexOf(fake *gofakeit.Faker, n int) string {
	var b strings.Builder
	b.Grow(n)
	var r uint64
	for i := 0; i < n; i++ {
		if i%16 == 0 {
			r = fake.Rand.Uint64()
		}
		b.WriteByte(hexDigits[r&15])
		r >>= 4
	}
	return b.String()
}

// Describe is a one-line account of the fleet's size.
func (f *Fleet) Describe() string {
	g := 0
	for _, a := range f.Accounts {
		g += len(a.Gateways)
	}
	return fmt.Sprintf("%d account(s), %d gateway(s), %d device(s)", len(f.Accounts), g, f.DeviceCount())
}
