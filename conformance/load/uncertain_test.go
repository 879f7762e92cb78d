package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// A change answered 503 storage_unavailable is "uncertain (503)", not
// "sent without an answer": the ack log marks it uncertain, the result
// counts it in Uncertain and not in Unanswered, and the summary and the
// report name the two apart. The target is a real simulator behind a
// proxy that answers every third request 503 in the request's format
// (JSON and XML both sent) without passing it on.
func TestUncertainCountedApartFromNoAnswer(t *testing.T) {
	f := fleet.Generate(1, 1, 4)
	sim := startSim(t, f)
	u, _ := url.Parse(sim.URL())
	proxy := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			format, _ := codec.FormatOf(r.Header.Get("Content-Type"))
			w.Header().Set("Content-Type", codec.ContentType(format))
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(codec.Error(format, device.Errorf(device.CodeStorageUnavailable, "", "no replica confirmed the change")))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	var log syncBuffer
	res, err := Run(context.Background(), Config{Target: front.URL, Fleet: f, Requests: 30, Concurrency: 1,
		Mix: Mix{Rename: 1, Command: 1}, Formats: []device.Format{device.JSON, device.XML}, AckLog: &log, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ReadAckLog(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	acked, uncertain, noAnswer := CountAcks(entries)
	if acked != 20 || uncertain != 10 || noAnswer != 0 {
		t.Fatalf("ack log: %d acknowledged, %d uncertain, %d without an answer; want 20, 10, 0", acked, uncertain, noAnswer)
	}
	for _, e := range entries {
		if e.Status == AckUncertain && e.Error != "503 storage_unavailable" {
			t.Errorf("an uncertain line's error: %q", e.Error)
		}
	}
	if res.Acknowledged != 20 || res.Uncertain != 10 || res.Unanswered != 0 {
		t.Errorf("result: %d acknowledged, %d uncertain, %d unanswered", res.Acknowledged, res.Uncertain, res.Unanswered)
	}
	var out strings.Builder
	res.WriteText(&out)
	if !strings.Contains(out.String(), "ack log     20 acknowledged, 10 uncertain (503), 0 sent without an answer") {
		t.Errorf("the summary does not name them apart:\n%s", out.String())
	}
	page, err := ReportPage(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "20 acknowledged, 10 uncertain (503), 0 sent without an answer") {
		t.Error("the report's ack log card does not name them apart")
	}
	merged, err := Merge([]*Result{res})
	if err != nil || merged.Uncertain != 10 || merged.Unanswered != 0 {
		t.Errorf("merged: %v, %d uncertain, %d unanswered", err, merged.Uncertain, merged.Unanswered)
	}
}
