package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// BenchmarkSend is one command, drawn, signed, encoded, sent and judged,
// through each sender, against a bare handler in the same process (whose
// cost is the same for all three): what conformance/client's recording of
// every exchange costs, and what the raw sender saves in allocations. The
// raw sender's gain in requests/s shows when generator and target are
// separate processes (docs/benchmarks.md).
func BenchmarkSend(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(successJSON)
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	p, err := newPlan(fleet.Generate(1, 4, 250), Mix{Command: 1}, []device.Format{device.JSON})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	senders := map[string]func() sender{
		ViaRaw: func() sender { return newRawSender(base, 10*time.Second) },
		ViaHTTP: func() sender {
			s, _ := newLeanSender(ctx, newTransport(1, 10*time.Second), base, formatHeaders())
			return s
		},
		ViaClient: func() sender {
			c, _ := client.New(client.Config{BaseURL: srv.URL, Transport: newTransport(1, 10*time.Second)})
			return &clientSender{c: c}
		},
	}
	for _, via := range vias {
		b.Run(via, func(b *testing.B) {
			s := senders[via]()
			rng := newRNG(1)
			var r request
			b.ReportAllocs()
			for b.Loop() {
				if err := p.draw(ctx, rng, time.Now(), &r); err != nil {
					b.Fatal(err)
				}
				if a := s.send(ctx, &r); !a.ok {
					b.Fatalf("%+v", a)
				}
			}
			if c, ok := s.(interface{ close() }); ok {
				c.close()
			}
		})
	}
}

// BenchmarkDraw is drawing, signing and encoding one request, without
// sending it.
func BenchmarkDraw(b *testing.B) {
	for _, format := range []device.Format{device.JSON, device.XML} {
		b.Run(format.String(), func(b *testing.B) {
			p, err := newPlan(fleet.Generate(1, 4, 250), DefaultMix, []device.Format{format})
			if err != nil {
				b.Fatal(err)
			}
			rng := newRNG(1)
			var r request
			var body []byte
			b.ReportAllocs()
			for b.Loop() {
				if err := p.draw(context.Background(), rng, time.Now(), &r); err != nil {
					b.Fatal(err)
				}
				if body, err = codec.AppendRequest(body[:0], r.format, r.fields); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCount is what counting one answered request costs a worker:
// its totals, and the series of its current time bucket (all, the
// operation's, the target's), each with an HDR histogram.
func BenchmarkCount(b *testing.B) {
	r := &run{timeline: newTimeline(), targets: []string{"http://a"}, seriesNames: []string{SeriesAll, "op:command", "op:message", "op:update_name", "target:http://a"}}
	w := &worker{run: r, failures: map[string]int64{}, perTarget: make([]TargetResult, 1), bucket: newWBucket(len(r.seriesNames))}
	w.req.op, w.req.format = device.SendCommand, device.JSON
	a := answer{status: 200, ok: true}
	start := time.Now() // the worker reads the clock anyway, for the latency
	b.ReportAllocs()
	for b.Loop() {
		w.count(a, 0, start, 230*time.Microsecond)
	}
}
