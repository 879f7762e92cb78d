package link

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestNothingIsSentOnceTheTargetHasStoppedAnswering: requests waiting
// for their place among those in flight when the target stops answering
// are not sent. A target that answers 500 to everything gets at most
// MaxSilent requests and those already in flight, however many checks
// were queued behind them, in JSON and in XML.
func TestNothingIsSentOnceTheTargetHasStoppedAnswering(t *testing.T) {
	for _, format := range []device.Format{device.JSON, device.XML} {
		t.Run(format.String(), func(t *testing.T) {
			var got atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				time.Sleep(2 * time.Millisecond)
				w.WriteHeader(http.StatusInternalServerError)
			}))
			defer srv.Close()
			c, err := client.New(client.Config{BaseURL: srv.URL, Signer: client.FormatSigner{}})
			if err != nil {
				t.Fatal(err)
			}
			const inFlight = 4
			l := New(Config{Client: c, Concurrency: inFlight})
			req := client.Request{Path: device.SendCommand.Path(), Format: format, Fields: []client.Field{{Key: device.FieldMAC, Value: settleMAC}}}
			var wg sync.WaitGroup
			var refused atomic.Int64
			for range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, err := l.RoundTrip(context.Background(), req)
					if errors.Is(err, stopped{"sent"}) {
						refused.Add(1)
					}
				}()
			}
			wg.Wait()
			if n := got.Load(); n > MaxSilent+inFlight {
				t.Errorf("the target got %d requests after it stopped answering; at most %d (MaxSilent and those in flight)", n, MaxSilent+inFlight)
			}
			if !l.Stopped() || refused.Load() < 200-MaxSilent-inFlight {
				t.Errorf("stopped %v, %d requests not sent, want at least %d", l.Stopped(), refused.Load(), 200-MaxSilent-inFlight)
			}
		})
	}
}
