package fleet

import (
	"fmt"

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
// "Kitchen Light". The same seed gives the same fleet.
func Generate(seed int64, gateways, perGateway int) *Fleet {
	fake := gofakeit.New(seed)
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
			n := nouns[t.Name]
			name := rooms[fake.Number(0, len(rooms)-1)] + " " + n[fake.Number(0, len(n)-1)]
			g.Devices = append(g.Devices, Device{SN: sn, Type: t.Name, Name: name})
		}
		a.Gateways = append(a.Gateways, g)
	}
	return &Fleet{Sign: "md5", Accounts: []Account{a}}
}

const hexDigits = "0123456789abcdef"

func hexOf(fake *gofakeit.Faker, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hexDigits[fake.Uint8()&15]
	}
	return string(b)
}

// Describe is a one-line account of the fleet's size.
func (f *Fleet) Describe() string {
	g := 0
	for _, a := range f.Accounts {
		g += len(a.Gateways)
	}
	return fmt.Sprintf("%d account(s), %d gateway(s), %d device(s)", len(f.Accounts), g, f.DeviceCount())
}
