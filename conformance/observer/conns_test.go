package observer

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadsTogetherReuseTheirConnections: waves of reads sent together, as
// an effect check sends them, open their connections once; the next wave
// finds them kept, not one new connection per read.
func TestReadsTogetherReuseTheirConnections(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"sn":"01","type":"Light Dimmer","name":"Hall","state":{"dimming":40}}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	defer CloseIdleConnections()
	CloseIdleConnections()
	r := Reader{Base: srv.URL}
	const together, waves = 24, 4
	for range waves {
		var wg sync.WaitGroup
		for range together {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.Device(context.Background(), "a4c138f0e2b1", "01"); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	if n := opened.Load(); n > together+together/2 {
		t.Errorf("%d connections opened for %d waves of %d reads: the kept ones were not reused", n, waves, together)
	}
}
