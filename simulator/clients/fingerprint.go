package clients

import (
	"math/bits"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// fingerprint identifies a request's fields whatever their order: the
// sum of a 64-bit hash of each field (fieldHash).
type fingerprint uint64

// field hashes one field: its key, and its value seeded by the key's
// hash, so that the same value under another key differs.
func (r *Recorder) field(key, value string) fingerprint {
	if len(key) > 16 {
		return fingerprint(strHash(strHash(r.fieldSeed, key), value))
	}
	// strHash's steps, the key's and the value's in one call.
	ka, kb := shortWords(key)
	h := mum(ka^hp1, kb^r.fieldSeed^hp0)
	va, vb, h := words(h, value)
	h = mum(va^hp1^uint64(len(key))<<32, vb^h)
	return fingerprint(mum(hp1^uint64(len(value)), h^hp2))
}

// words reads s as strHash does: its last two words (overlapping where s
// is shorter than 16 bytes), and seed with every 16 bytes before those
// folded in.
func words(seed uint64, s string) (a, b, folded uint64) {
	n := len(s)
	if n <= 16 {
		a, b = shortWords(s)
		return a, b, seed
	}
	for rest := s; len(rest) > 16; rest = rest[16:] {
		seed = mum(le64(rest)^hp1, le64(rest[8:])^seed)
	}
	return le64(s[n-16:]), le64(s[n-8:]), seed
}

// shortWords reads s, of at most 16 bytes, as strHash does: in two
// words, overlapping where s is shorter than 16 bytes.
func shortWords(s string) (a, b uint64) {
	n := len(s)
	switch {
	case n == 0:
	case n < 4:
		a = uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1])
	case n <= 8:
		a, b = le32(s), le32(s[n-4:])
	default:
		a, b = le64(s), le64(s[n-8:])
	}
	return a, b
}

const (
	hp0 = 0xa0761d6478bd642f
	hp1 = 0xe7037ed1a0b428db
	hp2 = 0x8ebc6af09c88c6e3
)

// strHash is a 64-bit hash of s from seed, after wyhash's construction
// (the halves of 128-bit products folded together, the input read
// eight bytes at a time, short inputs in overlapping words). Every input
// bit changes about half the output's, so sums of field hashes do not
// cancel (TestStrHashSpreads). A field took two maphash calls and a
// finaliser, some 13 ns; field takes about 7 (BenchmarkFieldHash, -cpu 1),
// eight times a request.
func strHash(seed uint64, s string) uint64 {
	a, b, seed := words(seed^hp0, s)
	return mum(hp1^uint64(len(s)), mum(a^hp1, b^seed)^hp2)
}

// mum multiplies a and b into 128 bits and folds the halves together.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint64 {
	_ = s[3]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// window remembers the last n fingerprints and when each was seen: a
// ring in their order, and an open-addressed table (linear probing, at
// most half full) of the ring's slots, to find a fingerprint at once.
// A fingerprint seen twice in the window is found by its later sight;
// the table holds a fingerprint's latest slot only. A Go map here cost
// a fifth of the fold (its hashing, and a delete for every add once the
// ring is full).
type window struct {
	ring []seen
	next int
	// slots holds ring index + 1 of each fingerprint's latest sight, 0
	// where empty; its length is a power of two, at least twice the
	// ring's.
	slots []int32
}

type seen struct {
	fp fingerprint
	// at is when, in Unix nanoseconds (no pointer for the collector to
	// follow, a ring a client).
	at int64
	// format is the request's format, which a report names.
	format device.Format
}

func newWindow(n int) window {
	size := 2
	for size < 2*n {
		size *= 2
	}
	return window{ring: make([]seen, 0, n), slots: make([]int32, size)}
}

// home is where fp's search in slots starts.
func (w *window) home(fp fingerprint) int {
	return int(uint64(fp)*0x9e3779b97f4a7c15>>32) & (len(w.slots) - 1)
}

// lookup is where fp's slot is in slots, or the empty place where its
// search ended.
func (w *window) lookup(fp fingerprint) int {
	mask := len(w.slots) - 1
	for i := w.home(fp); ; i = (i + 1) & mask {
		s := w.slots[i]
		if s == 0 || w.ring[s-1].fp == fp {
			return i
		}
	}
}

// find says when fp was last seen, and in which format, if it is among
// the last n.
func (w *window) find(fp fingerprint) (time.Time, device.Format, bool) {
	if len(w.ring) == 0 {
		return time.Time{}, 0, false
	}
	s := w.slots[w.lookup(fp)]
	if s == 0 {
		return time.Time{}, 0, false
	}
	return time.Unix(0, w.ring[s-1].at), w.ring[s-1].format, true
}

// add remembers fp seen at, forgetting the oldest fingerprint once n are
// held.
func (w *window) add(fp fingerprint, at time.Time, format device.Format) {
	slot := len(w.ring)
	if slot < cap(w.ring) {
		w.ring = append(w.ring, seen{})
	} else {
		slot = w.next
		w.next = (w.next + 1) % len(w.ring)
		// The oldest sight leaves the table, unless a later sight of
		// its fingerprint took its place there.
		if i := w.lookup(w.ring[slot].fp); w.slots[i] == int32(slot+1) {
			w.remove(i)
		}
	}
	w.ring[slot] = seen{fp, at.UnixNano(), format}
	w.slots[w.lookup(fp)] = int32(slot + 1)
}

// remove empties place i of slots, moving back the entries after it
// whose search passed it (linear probing's deletion: no tombstones).
func (w *window) remove(i int) {
	mask := len(w.slots) - 1
	for j := (i + 1) & mask; w.slots[j] != 0; j = (j + 1) & mask {
		h := w.home(w.ring[w.slots[j]-1].fp)
		// Entry j may fill i when its home is not in (i, j], cyclically.
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			w.slots[i] = w.slots[j]
			i = j
		}
	}
	w.slots[i] = 0
}
