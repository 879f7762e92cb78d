package store

import (
	"hash/maphash"
	"math/bits"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// snIndex finds a device's position on its gateway by sn in constant
// expected time. It is an open-addressing hash table of positions with
// linear probing, kept at most three quarters full; the keys themselves are
// the sn strings of the fleet's devices, which the store keeps anyway, so a
// device costs 4 to 11 bytes of index where a map[SN]uint32 costs about 40.
// The hash is seeded per table, so fleets written to collide do not
// degrade lookups.
type snIndex struct {
	seed  maphash.Seed
	slots []uint32 // position+1 of a device; 0 is an empty slot
}

func newSNIndex(devices []fleet.Device) snIndex {
	n := 1 << bits.Len(uint(len(devices)+len(devices)/3))
	ix := snIndex{seed: maphash.MakeSeed(), slots: make([]uint32, n)}
	for i := range devices {
		ix.insert(devices, uint32(i))
	}
	return ix
}

// insert adds the device at pos; a repeated sn (only in an unchecked
// fleet) takes the place of the earlier one, as a map would.
func (ix *snIndex) insert(devices []fleet.Device, pos uint32) {
	sn := devices[pos].SN
	mask := uint64(len(ix.slots) - 1)
	for h := maphash.String(ix.seed, sn) & mask; ; h = (h + 1) & mask {
		if s := ix.slots[h]; s == 0 || devices[s-1].SN == sn {
			ix.slots[h] = pos + 1
			return
		}
	}
}

// find returns the position of the device with the given lower-case sn.
func (ix *snIndex) find(devices []fleet.Device, sn string) (uint32, bool) {
	mask := uint64(len(ix.slots) - 1)
	for h := maphash.String(ix.seed, sn) & mask; ; h = (h + 1) & mask {
		s := ix.slots[h]
		if s == 0 {
			return 0, false
		}
		if devices[s-1].SN == sn {
			return s - 1, true
		}
	}
}
