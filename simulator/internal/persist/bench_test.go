package persist_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// BenchmarkSyncDevice is the cost of making one change durable: one
// request at a time (a whole commit and fsync each), and many at once
// (grouped by Batch).
func BenchmarkSyncDevice(b *testing.B) {
	f := fleet.Generate(1, 1, 1000)
	g := f.Accounts[0].Gateways[0]
	b.Run("serial", func(b *testing.B) {
		_, pf := open(b, filepath.Join(b.TempDir(), "s.db"), f)
		defer pf.Close()
		for i := 0; b.Loop(); i++ {
			if err := pf.SyncDevice(f.Accounts[0].ID, g.MAC, g.Devices[i%len(g.Devices)].SN); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		_, pf := open(b, filepath.Join(b.TempDir(), "s.db"), f)
		defer pf.Close()
		var n atomic.Int64
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := int(n.Add(1))
				if err := pf.SyncDevice(f.Accounts[0].ID, g.MAC, g.Devices[i%len(g.Devices)].SN); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
