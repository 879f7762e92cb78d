package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// DelayStatsPath is where a DelayProxy answers its own figures (JSON
// DelayStats), neither delayed nor counted nor forwarded.
const DelayStatsPath = "/_gwbench/delays"

// DelayProxy is a reverse proxy that holds each request, whatever its
// path (the observer's reads and the admin API's calls included), for a
// delay drawn uniformly from 0 to Max by a seeded source before it
// forwards it: a target that answers as a service across a network does,
// Max/2 on average. It counts the delays it added.
type DelayProxy struct {
	max time.Duration
	rp  *httputil.ReverseProxy

	mu    sync.Mutex
	rng   *rand.Rand
	n     int64
	total time.Duration
	// inFlight are the requests held or forwarded now; peak the most at
	// once.
	inFlight, peak int64
}

// DelayStats are the delays a DelayProxy added.
type DelayStats struct {
	Requests int64         `json:"requests"`
	Total    time.Duration `json:"total_ns"`
	Max      time.Duration `json:"max_ns"`
	// Peak is the most requests in flight at once through the proxy.
	Peak int64 `json:"peak_in_flight"`
}

// Mean is the mean delay added to a request.
func (s DelayStats) Mean() time.Duration {
	if s.Requests == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Requests)
}

// NewDelayProxy forwards to target after a delay from 0 to max (0: none),
// drawn from a source seeded with seed.
func NewDelayProxy(target *url.URL, max time.Duration, seed uint64) *DelayProxy {
	p := &DelayProxy{max: max, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		// The suite keeps up to --concurrency requests in flight: keep as
		// many connections to the target, so that none is opened per request.
		Transport: &http.Transport{Proxy: nil, MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute,
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
	}
	return p
}

// draw is the next delay, counted, and the request in flight.
func (p *DelayProxy) draw() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight++
	p.peak = max(p.peak, p.inFlight)
	var d time.Duration
	if p.max > 0 {
		d = time.Duration(p.rng.Int64N(int64(p.max) + 1))
	}
	p.n++
	p.total += d
	return d
}

// Stats are the delays added so far.
func (p *DelayProxy) Stats() DelayStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return DelayStats{Requests: p.n, Total: p.total, Max: p.max, Peak: p.peak}
}

// done ends a request that draw began.
func (p *DelayProxy) done() {
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
}

func (p *DelayProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == DelayStatsPath {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p.Stats())
		return
	}
	d := p.draw()
	defer p.done()
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}

// loopback says whether host (an IP address or "localhost") is this
// machine: the proxy listens and forwards only there.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServeDelayProxy listens on addr (loopback only) and forwards to target
// (loopback only) through a DelayProxy until ctx ends. Its first line on
// out is its URL, as gwsim's banner is.
func ServeDelayProxy(ctx context.Context, addr, target string, max time.Duration, seed uint64, out io.Writer) error {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("--to %q is not an http:// URL", target)
	}
	if !loopback(u.Hostname()) {
		return fmt.Errorf("--to %q is not on this machine's loopback", target)
	}
	if host, _, err := net.SplitHostPort(addr); err != nil || !loopback(host) {
		return fmt.Errorf("--addr %q is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p := NewDelayProxy(u, max, seed)
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "http://%s delays each request by 0 to %s (seed %d) before %s; its figures: %s\n", ln.Addr(), max, seed, target, DelayStatsPath)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// delayStats reads a running DelayProxy's figures.
func delayStats(ctx context.Context, proxyURL string) (DelayStats, error) {
	var s DelayStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, proxyURL+DelayStatsPath, nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("%s: %d", DelayStatsPath, resp.StatusCode)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}
