package clients

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestTimestampUnixIsParseInLocation: the report's own timestamp reader
// accepts exactly the timestamps time.ParseInLocation accepts in the
// published layout, and names the same second, in UTC and in a zone with
// daylight saving time.
func TestTimestampUnixIsParseInLocation(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("UTC-5", -5*3600) // no zone database here
	}
	years := []int{0, 1, 4, 100, 399, 400, 1600, 1899, 1900, 1969, 1970, 1971, 1999, 2000, 2004, 2024, 2026, 2100, 2400, 9999}
	clocks := []string{"000000", "235959", "120000", "240000", "236000", "235960", "020000", "023000"}
	var checked int
	check := func(s string) {
		for _, loc := range []*time.Location{time.UTC, ny} {
			want, werr := time.ParseInLocation(device.TimestampLayout, s, loc)
			got, ok := timestampUnix(s, loc)
			if ok != (werr == nil) || (ok && got != want.Unix()) {
				t.Fatalf("%q in %v: got %d %v, time.ParseInLocation %d %v", s, loc, got, ok, want.Unix(), werr)
			}
			checked++
		}
	}
	for _, y := range years {
		for m := 0; m <= 13; m++ {
			for d := 0; d <= 32; d++ {
				for _, c := range clocks {
					check(fmt.Sprintf("%04d%02d%02d%s", y, m, d, c))
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := []byte(fmt.Sprintf("%04d%02d%02d%02d%02d%02d", rng.IntN(10000), rng.IntN(14), rng.IntN(33), rng.IntN(25), rng.IntN(61), rng.IntN(61)))
		if rng.IntN(10) == 0 {
			b[rng.IntN(len(b))] = " x-+/:"[rng.IntN(6)]
		}
		check(string(b))
	}
	for _, s := range []string{"", "2026112612000", "202611261200000", "２０２６１１２６１２００００"} {
		check(s)
	}
	t.Logf("%d timestamps compared", checked)
}

// TestSinceUnixIsSub: the skew is time.Time.Sub's, saturation included.
func TestSinceUnixIsSub(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Now()
	for range 100000 {
		var unix int64
		switch rng.IntN(3) {
		case 0:
			unix = now.Unix() + rng.Int64N(200) - 100
		case 1:
			unix = now.Unix() + rng.Int64N(2e10) - 1e10
		default:
			unix = rng.Int64N(253402300800+62135596800) - 62135596800 // years 0001 to 9999
		}
		at := now.Add(time.Duration(rng.Int64N(2e9)))
		if got, want := sinceUnix(unix, at), time.Unix(unix, 0).Sub(at); got != want {
			t.Fatalf("sinceUnix(%d, %v) = %v, Sub %v", unix, at, got, want)
		}
	}
}
