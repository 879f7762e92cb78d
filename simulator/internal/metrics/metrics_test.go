package metrics_test

import (
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/internal/metrics"
)

// BenchmarkRequestMetrics is what the metrics cost one request: a
// success and an error, counted from many goroutines.
func BenchmarkRequestMetrics(b *testing.B) {
	m := metrics.NewServer(metrics.Gauges{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if i++; i%8 == 0 {
				m.Request(device.SendCommand, device.XML, 400, device.CodeInvalidField, 90*time.Microsecond)
			} else {
				m.Request(device.SendCommand, device.JSON, 200, "", 70*time.Microsecond)
			}
		}
	})
}

// TestRequestAllocatesNothing: once a label set was seen, counting a
// request allocates nothing.
func TestRequestAllocatesNothing(t *testing.T) {
	m := metrics.NewServer(metrics.Gauges{})
	m.Request(device.UpdateName, device.XML, 404, device.CodeDeviceNotFound, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() {
		m.Request(device.UpdateName, device.XML, 404, device.CodeDeviceNotFound, time.Millisecond)
	}); n != 0 {
		t.Errorf("a request allocates %v times", n)
	}
}
