package clients

import (
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestWindowFindsTheLastN checks the window against the plain reading of
// what it keeps: a fingerprint is found when it was added among the last
// n adds, with the time of its latest add. Fingerprints are drawn from
// few values, so that they recur, and with homes forced together, so
// that the table's probing and deletion are exercised.
func TestWindowFindsTheLastN(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 64, 256} {
		for _, kinds := range []int{2, n, 4 * n} {
			w := newWindow(n)
			base := time.Unix(1_800_000_000, 0)
			latest := map[fingerprint]int{} // each fingerprint's latest add
			draw := func() fingerprint {
				if rng.IntN(2) == 0 {
					// Same home, another fingerprint: the multiplier's
					// high bits are what picks the home.
					return fingerprint(uint64(rng.IntN(kinds)) << 58)
				}
				return fingerprint(rng.IntN(kinds))
			}
			steps := 20*n + 50
			for step := 0; step < steps; step++ {
				fp := draw()
				w.add(fp, base.Add(time.Duration(step)*time.Millisecond), 0)
				latest[fp] = step
				for range 16 {
					q := draw()
					at, ok := latest[q]
					found := ok && at > step-n
					want := base.Add(time.Duration(at) * time.Millisecond)
					got, _, gotOK := w.find(q)
					if gotOK != found || (found && !got.Equal(want)) {
						t.Fatalf("n %d, step %d, fingerprint %x: found %v at %v, want %v at %v", n, step, q, gotOK, got, found, want)
					}
				}
			}
			used := 0
			for _, s := range w.slots {
				if s != 0 {
					used++
				}
			}
			if used > n {
				t.Fatalf("n %d: %d places of the table used", n, used)
			}
		}
	}
}

// TestStrHashSpreads: flipping any one bit of a field's key or value
// changes about half the bits of its hash, and the values a working app
// sends (numbers, timestamps, signs) do not collide.
func TestStrHashSpreads(t *testing.T) {
	r := New(Config{})
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100} {
		var flips, changed int
		for range 200 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			h := r.field("dimming", string(b))
			for i := range 8 * n {
				b[i/8] ^= 1 << (i % 8)
				changed += bits.OnesCount64(uint64(h ^ r.field("dimming", string(b))))
				flips++
				b[i/8] ^= 1 << (i % 8)
			}
		}
		if mean := float64(changed) / float64(flips); mean < 30 || mean > 34 {
			t.Errorf("length %d: a flipped bit changes %.1f bits of 64 on average", n, mean)
		}
	}
	seen := map[fingerprint]string{}
	note := func(key, value string) {
		fp := r.field(key, value)
		if other, ok := seen[fp]; ok {
			t.Fatalf("%s=%s and %s hash alike", key, value, other)
		}
		seen[fp] = key + "=" + value
	}
	for i := range 200000 {
		note("dimming", strconv.Itoa(i))
		note("timestamp", strconv.Itoa(20261126000000+i))
	}
	for _, key := range []string{"api_key", "sn", "mac", "myservice_id", "name"} {
		note(key, "0123456789abcdef0123456789abcdef")
	}
	if r.field("sn", "ab") == r.field("s", "nab") {
		t.Error("a key's end moved into the value hashes alike")
	}
}

// TestCoverageIndex: every operation, device type (or none) and format
// has its own place in a coverage array, and reads back from it.
func TestCoverageIndex(t *testing.T) {
	used := map[int]bool{}
	for _, op := range device.Operations {
		for typ := 0; typ <= len(device.Types); typ++ {
			for _, f := range []device.Format{device.JSON, device.XML} {
				d := desc{op, uint8(typ), f}
				i := coverageIndex(d)
				if i < 0 || i >= coverageSize || used[i] {
					t.Fatalf("%v: place %d of %d (used: %v)", d, i, coverageSize, used[i])
				}
				used[i] = true
				if back := coverageDesc(i); back != d {
					t.Fatalf("%v: read back as %v", d, back)
				}
			}
		}
	}
	if len(used) != coverageSize {
		t.Errorf("%d places used of %d", len(used), coverageSize)
	}
}

// BenchmarkFieldHash is a field's hash, as the request path takes it,
// against the two maphash calls it replaced.
func BenchmarkFieldHash(b *testing.B) {
	r := New(Config{})
	fields := [][2]string{{"api_key", "demo-key"}, {"timestamp", "20261126201500"}, {"sign", "0123456789abcdef0123456789abcdef"},
		{"myservice_id", "5f3a9c0e1b2d4f6a8c0e1b2d"}, {"mac", "a4c138f0e2b1"}, {"sn", "0123456789abcdef0123456789abcd06"},
		{"type", "Light Dimmer"}, {"dimming", "55"}}
	b.Run("field", func(b *testing.B) {
		var sum fingerprint
		for i := 0; i < b.N; i++ {
			f := fields[i&7]
			sum += r.field(f[0], f[1])
		}
		sink = uint64(sum)
	})
	b.Run("maphash", func(b *testing.B) {
		seed := maphash.MakeSeed()
		var sum uint64
		for i := 0; i < b.N; i++ {
			f := fields[i&7]
			sum += maphash.String(seed, f[0])*0x9e3779b97f4a7c15 ^ maphash.String(seed, f[1])
		}
		sink = sum
	})
}

var sink uint64

// TestHasUpper: hasUpper, eight bytes at a time, says what a byte loop
// says, for every letter and the bytes around 'A' and 'Z', at every place.
func TestHasUpper(t *testing.T) {
	slow := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if 'A' <= s[i] && s[i] <= 'Z' {
				return true
			}
		}
		return false
	}
	base := []byte("0123456789abcdef0123456789abcdef01")
	for n := 0; n <= len(base); n++ {
		for i := 0; i < n; i++ {
			for _, c := range []byte{'@', 'A', 'M', 'Z', '[', 'a', 'z', '0', 0x7f, 0x80, 0xc3, 0xff} {
				b := append([]byte(nil), base[:n]...)
				b[i] = c
				if got, want := hasUpper(string(b)), slow(string(b)); got != want {
					t.Fatalf("hasUpper(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}
