package catalog

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// TestPickKeepsWhatDerivingAfreshGives: Bench.Pick gives, for every
// sample of every envelope and operation field, what the field's samples
// derived afresh from the same value give (the first of a slug), from
// goroutines side by side, for more values than it keeps; and nothing
// for a slug the field does not have.
func TestPickKeepsWhatDerivingAfreshGives(t *testing.T) {
	fields := append([]*oracle.Field{&oracle.SN, &oracle.DeviceID, &oracle.TypeField, &oracle.FormatField,
		&oracle.MessageType, &oracle.MessageValue, &oracle.Name}, oracle.Envelope...)
	for _, typ := range oracle.Types {
		for i := range typ.Fields {
			fields = append(fields, &typ.Fields[i])
		}
	}
	b := &Bench{}
	bases := func(f *oracle.Field) []string {
		// Values a valid request carries, from which the run derives.
		bs := []string{f.Example}
		if f.Kind == oracle.FormatName {
			bs = []string{"json", "xml"}
		}
		if f.Kind == oracle.Timestamp {
			// More than the bound of kept lists: a target whose clock moves
			// on every request.
			for i := range maxPicks {
				bs = append(bs, fmt.Sprintf("2026010112%04d", i))
			}
		}
		return bs
	}
	var wg sync.WaitGroup
	for _, f := range fields {
		wg.Go(func() {
			for _, base := range bases(f) {
				fresh := samplesOf(f, base)
				seen := map[string]bool{}
				for _, want := range fresh {
					if seen[want.Slug] {
						continue
					}
					seen[want.Slug] = true
					// Twice: the second from the kept list, where kept.
					for range 2 {
						got, ok := b.Pick(f, base, want.Slug)
						if !ok || !reflect.DeepEqual(got, want) {
							t.Errorf("%s from %q, %s: got %+v (%v), want %+v", f.Name, base, want.Slug, got, ok, want)
							return
						}
					}
				}
				if _, ok := b.Pick(f, base, "no-such-slug"); ok {
					t.Errorf("%s from %q: a sample for a slug it does not have", f.Name, base)
				}
			}
		})
	}
	wg.Wait()
	if n := len(b.picks); n != maxPicks {
		t.Errorf("%d lists kept, want the bound %d", n, maxPicks)
	}
}
