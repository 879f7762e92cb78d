package auth

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestSignMatches(t *testing.T) {
	good := Sign("k", "s", "20240501120000")
	long := strings.Repeat("x", 300) // past the stack buffer
	for _, c := range []struct {
		key, sign string
		want      bool
	}{
		{"k", good, true},
		{"k", strings.ToUpper(good), true},
		{"k", good[:31], false},
		{"k", good + "0", false},
		{"k", strings.Repeat("0", 32), false},
		{"k2", good, false},
		{long, Sign(long, "s", "20240501120000"), true},
	} {
		if got := signMatches(c.key, "s", "20240501120000", c.sign); got != c.want {
			t.Errorf("signMatches(%.10s, %q) = %v", c.key, c.sign, got)
		}
	}
}

// TestSignMemoIsMD5 holds the kept sign to md5 of the three inputs: the
// same api_key and timestamp under another secret (a rotated key), keys
// that share a memo slot, and requests of many goroutines at once.
func TestSignMemoIsMD5(t *testing.T) {
	const ts = "20240501120000"
	cases := [][3]string{
		{"key-a1", "s1", ts}, {"key-a1", "s1", ts}, {"key-a1", "s2", ts}, {"key-a1", "s1", ts},
		{"key-a1", "s1", "20240501120001"}, {"key-b1", "s1", ts}, {"key-a1", "s1", ts},
	}
	// Keys of one slot, one after the other.
	for i := 0; len(cases) < 40; i++ {
		k := "key-" + strings.Repeat("x", i%7) + "ab"
		if memoSlot(k) == memoSlot("key-ab") {
			cases = append(cases, [3]string{k, "s", ts}, [3]string{"key-ab", "s", ts})
		}
	}
	for _, c := range cases {
		want := Sign(c[0], c[1], c[2])
		if got := expectedSign(c[0], c[1], c[2]); string(got[:]) != want {
			t.Fatalf("expectedSign%q = %s, md5 says %s", c, got, want)
		}
		if !signMatches(c[0], c[1], c[2], want) || signMatches(c[0], c[1]+"x", c[2], want) {
			t.Fatalf("signMatches%q does not follow the secret", c)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k, s := fmt.Sprintf("key-%d", i%5), fmt.Sprintf("s%d", (i+g)%3)
				ts := fmt.Sprintf("2024050112%04d", i%3)
				if got := expectedSign(k, s, ts); string(got[:]) != Sign(k, s, ts) {
					t.Errorf("expectedSign(%s, %s, %s) under load = %s", k, s, ts, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestSignMatchesFoldsOnlyASCIILetters holds the word-at-a-time
// comparison to the byte-by-byte one: every byte value in every place of
// a right sign, in a sign written in upper case, and beside bytes of 0x80
// and more, whose sums could carry into the next byte.
func TestSignMatchesFoldsOnlyASCIILetters(t *testing.T) {
	const key, secret, ts = "key-fold", "s", "20240501120000"
	good := Sign(key, secret, ts)
	byBytes := func(sign string) bool {
		if len(sign) != len(good) {
			return false
		}
		for i := 0; i < len(sign); i++ {
			c := sign[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != good[i] {
				return false
			}
		}
		return true
	}
	for _, base := range []string{good, strings.ToUpper(good), strings.Repeat("\xff", 32), strings.Repeat("\x80Z", 16)} {
		for i := 0; i < 32; i++ {
			for c := 0; c < 256; c++ {
				b := []byte(base)
				b[i] = byte(c)
				if got, want := signMatches(key, secret, ts, string(b)), byBytes(string(b)); got != want {
					t.Fatalf("signMatches(%q) = %v, byte by byte %v", b, got, want)
				}
			}
		}
	}
	if !signMatches(key, secret, ts, strings.ToUpper(good)) {
		t.Fatal("the upper-case sign is refused")
	}
	for _, w := range []uint64{0, 0x4041425A5B607A7B, 0xC1DAFF80415A0000, 0x8041805A80618041} {
		var b, want [8]byte
		for i := range b {
			b[i] = byte(w >> (8 * i))
			want[i] = b[i]
			if 'A' <= want[i] && want[i] <= 'Z' {
				want[i] += 'a' - 'A'
			}
		}
		if got := lowerASCII8(w); got != le64(string(want[:])) {
			t.Errorf("lowerASCII8(%#x) = %#x, want % x", w, got, want)
		}
	}
}
