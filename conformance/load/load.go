// Package load generates load on an implementation of the Gateway Device
// Management Interface and measures it: a mix of valid, freshly signed
// commands, messages and renames over a fleet's devices, at a set rate or
// as fast as the target answers, with throughput, latency percentiles,
// status codes and every answer other than success counted as an error.
// gwconform load is its command line.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

// Config is one run. Target (or Targets) and Fleet are required, and
// Duration or Requests (or both: whichever ends first).
type Config struct {
	// Target is the base URL of the implementation.
	Target string
	// Targets, when set, are several base URLs of one implementation (its
	// replicas behind no balancer) and Target is not used: the k-th
	// request of the run goes to Targets[k % len(Targets)], round-robin.
	// A target that stops answering counts its errors; the load goes on
	// to the others.
	Targets []string
	// Fleet gives the credentials, gateways and devices to send to.
	Fleet *fleet.Fleet
	// Rate is requests per second across all workers; 0 is as fast as the
	// target answers.
	Rate float64
	// Duration ends the run: no request starts after it.
	Duration time.Duration
	// Requests ends the run after that many requests.
	Requests int64
	// Concurrency is the number of workers, each with one request in
	// flight at a time (and one connection); 1 when zero.
	Concurrency int
	// Formats are drawn from at random for each request; both when empty.
	Formats []device.Format
	// Mix weighs the operations; DefaultMix when zero.
	Mix Mix
	// Timeout bounds the wait for an answer; 10 s when zero. (The raw
	// sender moves a connection's deadline only when less than half of it
	// is left, so an answer may be cut off after half the timeout.)
	Timeout time.Duration
	// Via picks how requests are sent: ViaRaw (HTTP/1.1 spoken by this
	// package over kept-alive connections, the fastest), ViaHTTP
	// (net/http's transport) or ViaClient (conformance/client, as the
	// checks send). Empty is ViaRaw for plain http:// targets reached
	// without a proxy, else ViaHTTP.
	Via string
	// Progress receives one line a second while the run lasts; nil for none.
	Progress io.Writer
	// Seed makes the drawn devices and values repeatable.
	Seed uint64
	// Transport replaces the generator's own transport, for tests.
	Transport http.RoundTripper
	// AckLog, when set, receives one JSON line (AckEntry) per
	// acknowledged request (200 with status success) and per request sent
	// that got no complete answer, which may or may not have been applied.
	// Each device is then owned by one worker (device i by worker i mod
	// Concurrency), so a device's requests are sequential and its lines
	// are in the order of its attempts: the last acknowledged change of
	// each device is well defined. Concurrency must not exceed the fleet's
	// devices (with shards, Concurrency times Shards must not).
	AckLog io.Writer
	// Shard and Shards (Shards > 1) make the run one of Shards sharing
	// the load, each on its own machine: this one sends only to the
	// devices whose index in the fleet is Shard mod Shards (so no two
	// shards send to one device, and their ack logs stay checkable), at
	// Rate/Shards, and its share of Requests. Shard counts from 0, as
	// Kubernetes' JOB_COMPLETION_INDEX does.
	Shard, Shards int
	// FitConcurrency, with AckLog, lowers Concurrency to what the fleet
	// allows (its devices over Shards, at least 1) rather than refusing
	// to start: a recipe that does not know the fleet it will meet (a
	// Kubernetes Job reading the stack's fleet) still runs.
	// Result.Concurrency is then the number of workers used.
	FitConcurrency bool
}

// Result is what a run measured.
type Result struct {
	Target      string  `json:"target"`
	Rate        float64 `json:"rate"`
	Concurrency int     `json:"concurrency"`
	// Via is how requests were sent (Config.Via).
	Via string `json:"via"`
	// Requests is the number of requests sent and finished, answered or not.
	Requests int64 `json:"requests"`
	// NotSent counts the turns of the schedule of Rate that were not sent
	// because no worker could start them in time (every worker waited on
	// a slow or stalled target) or starting them would have exceeded the
	// rate in a one-second window: the rate is a ceiling, and what an
	// outage kept from being sent is not sent later in a burst.
	NotSent int64 `json:"not_sent,omitempty"`
	// Errors counts every request that did not get success: rejections
	// (any answer but 200 with status success; each request was valid) and
	// requests that got no complete answer.
	Errors  int64         `json:"errors"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Throughput is Requests per second of Elapsed.
	Throughput float64 `json:"requests_per_second"`
	Latency    Latency `json:"latency"`
	// Status counts answers by HTTP status; 0 counts requests that got no
	// complete answer.
	Status map[int]int64 `json:"status"`
	// Failures counts the errors by kind: "401 bad_signature" or
	// "no answer: timeout", with the operation and format.
	Failures map[string]int64 `json:"failures,omitempty"`
	// Operations counts requests by operation and format ("command/json").
	Operations map[string]int64 `json:"operations"`
	// Targets counts requests and errors per target when there are
	// several.
	Targets []TargetResult `json:"targets,omitempty"`
	// Acknowledged, Uncertain and Unanswered count the ack log's lines
	// (with Config.AckLog only) by status: AckAcknowledged, AckUncertain
	// (an answer 503 storage_unavailable or storage_failed) and
	// AckNoAnswer (sent, and no complete answer came).
	Acknowledged int64 `json:"acknowledged,omitempty"`
	Uncertain    int64 `json:"uncertain,omitempty"`
	Unanswered   int64 `json:"unanswered,omitempty"`
	// AckLogError is the first error writing the ack log, after which no
	// line was written.
	AckLogError string `json:"ack_log_error,omitempty"`
	// Start is when the run began; with Elapsed, its span in time.
	Start time.Time `json:"start"`
	// Shard is "I/N" for one shard of a spread load (Config.Shards).
	Shard string `json:"shard,omitempty"`
	// Series are the whole run's counts and full latency histogram, for
	// all requests (SeriesAll), per operation, per target and, merged, per
	// shard.
	Series map[string]*Tally `json:"series"`
	// Timeline is the same, in buckets of time.
	Timeline Timeline `json:"timeline"`
	// Events are the moments a target stopped answering or answered again.
	Events []Event `json:"events,omitempty"`
	// Shards are the results merged into this one (Merge), each without
	// its timeline; Missing names the shards of the load that were not.
	Shards  []*Result `json:"shards,omitempty"`
	Missing []string  `json:"missing_shards,omitempty"`
}

// TargetResult is what one of several targets got.
type TargetResult struct {
	URL      string `json:"url"`
	Requests int64  `json:"requests"`
	// Errors counts every request that did not get success; NoAnswer
	// those of them that got no complete answer.
	Errors   int64 `json:"errors"`
	NoAnswer int64 `json:"no_answer"`
}

// Latency is the distribution of the time from sending a request to
// having read its answer.
type Latency struct {
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	Max  time.Duration `json:"max_ns"`
	Mean time.Duration `json:"mean_ns"`
}

// Ways of sending, for Config.Via.
const (
	ViaRaw    = "raw"
	ViaHTTP   = "http"
	ViaClient = "client"
)

// maxFailureKinds bounds the distinct kinds of failure kept; the rest are
// counted under "other".
const maxFailureKinds = 50

// ErrShardDevices: each shard sends to devices of its own, so there must
// be no more shards than devices.
var ErrShardDevices = errors.New("each shard sends to devices of its own, so there must be no more shards than devices")

// ErrOwnedDevices: with an ack log each device is owned by one worker, so
// there must be no more workers than devices.
var ErrOwnedDevices = errors.New("each device is owned by one worker, so there must be no more workers than devices")

// Run sends the load and measures it. It returns an error only when the
// run could not start (bad config, unusable fleet); errors of requests are
// in the Result. Cancelling ctx stops the run early with what was measured.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	bases, names, err := cfg.parseTargets()
	if err != nil {
		return nil, err
	}
	p, err := newPlan(cfg.Fleet, cfg.Mix, cfg.Formats)
	if err != nil {
		return nil, err
	}
	shards := max(cfg.Shards, 1)
	if err := cfg.takeShare(p, shards); err != nil {
		return nil, err
	}
	var acks *ackLog
	if cfg.AckLog != nil {
		if cfg.Concurrency*shards > p.devices && cfg.FitConcurrency {
			cfg.Concurrency = max(1, p.devices/shards)
		}
		if cfg.Concurrency*shards > p.devices {
			return nil, fmt.Errorf("%w: %d workers, %d devices", ErrOwnedDevices, cfg.Concurrency*shards, p.devices)
		}
		acks = &ackLog{w: cfg.AckLog}
	}
	rt := cfg.Transport
	if rt == nil {
		t := newTransport(cfg.Concurrency, cfg.Timeout)
		defer t.CloseIdleConnections()
		rt = t
	}
	senders := senderMaker{ctx: ctx, via: cfg.chooseVia(bases), rt: rt, headers: formatHeaders(),
		timeout: cfg.Timeout, probe: cfg.AckLog != nil}
	r := newRun(cfg, p, names, acks)
	defer r.closeSenders()
	if err := r.makeWorkers(bases, shards, senders); err != nil {
		return nil, err
	}
	elapsed := r.drive(ctx)
	res := r.result(r.workers, strings.Join(names, ","), elapsed)
	res.Via = senders.via
	return res, nil
}

// parseTargets reads the base URLs of the targets (Target when Targets is
// empty) and their names without user info, for results and the ack log.
func (cfg *Config) parseTargets() (bases []*url.URL, names []string, err error) {
	targets := cfg.Targets
	if len(targets) == 0 {
		targets = []string{cfg.Target}
	}
	bases = make([]*url.URL, len(targets))
	names = make([]string, len(targets))
	for i, t := range targets {
		base, err := url.Parse(strings.TrimSuffix(t, "/"))
		if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
			return nil, nil, fmt.Errorf("target %q must be an http:// or https:// base URL", RedactURL(t))
		}
		bases[i], names[i] = base, RedactURL(base.String())
	}
	return bases, names, nil
}

// takeShare cuts the rate and the requests down to this shard's share of
// a load spread over shards; each shard needs devices of its own.
func (cfg *Config) takeShare(p *plan, shards int) error {
	if shards <= 1 {
		return nil
	}
	if p.devices < shards {
		return fmt.Errorf("%w: %d shards, %d devices", ErrShardDevices, shards, p.devices)
	}
	cfg.Rate /= float64(shards)
	if cfg.Requests > 0 {
		share := cfg.Requests / int64(shards)
		if int64(cfg.Shard) < cfg.Requests%int64(shards) {
			share++
		}
		if share == 0 {
			return fmt.Errorf("%d requests over %d shards leave shard %d none", cfg.Requests, shards, cfg.Shard)
		}
		cfg.Requests = share
	}
	return nil
}

// chooseVia is Config.Via, or by default the raw sender, unless a target
// needs what only net/http does: https, a proxy, or a test's transport.
func (cfg *Config) chooseVia(bases []*url.URL) string {
	via := cfg.Via
	if via == "" {
		via = ViaRaw
		for _, base := range bases {
			if base.Scheme != "http" || cfg.Transport != nil || proxied(base) {
				via = ViaHTTP
			}
		}
	}
	return via
}

// senderMaker makes each worker's sender to each target, the way Via
// says.
type senderMaker struct {
	ctx     context.Context
	via     string
	rt      http.RoundTripper
	headers map[device.Format]http.Header
	timeout time.Duration
	// probe has the raw sender learn whether an unanswered request
	// reached the target, for the ack log.
	probe bool
}

// newSender is a sender to base.
func (m senderMaker) newSender(base *url.URL) (sender, error) {
	switch m.via {
	case ViaRaw:
		if base.Scheme != "http" {
			return nil, errors.New("the raw sender speaks plain http only; use --via http for https")
		}
		s := newRawSender(base, m.timeout)
		s.probe = m.probe
		return s, nil
	case ViaClient:
		c, err := client.New(client.Config{BaseURL: base.String(), Timeout: m.timeout,
			MaxResponseBytes: maxAnswer, Transport: m.rt})
		return &clientSender{c: c}, err
	case ViaHTTP:
		return newLeanSender(m.ctx, m.rt, base, m.headers)
	}
	return nil, fmt.Errorf("via %q: use raw, http or client", m.via)
}

// newRun is the shared state of a run: its ceiling and budget when it
// has a rate, its tag when it keeps an ack log, and the names of its
// series (all, per operation at index op, per target).
func newRun(cfg Config, p *plan, names []string, acks *ackLog) *run {
	r := &run{cfg: cfg, plan: p, targets: names, acks: acks, timeline: newTimeline(),
		down: make([]atomic.Bool, len(names)), stalled: make([]atomic.Bool, len(names)),
		inflight: make([]atomic.Int64, len(names)), lastAnswer: make([]atomic.Int64, len(names))}
	if cfg.Rate > 0 {
		r.ceiling = newCeiling(cfg.Rate)
		r.budget.Store(cfg.Requests)
	}
	if acks != nil {
		r.runTag = "r" + strconv.FormatUint(uint64(time.Now().UnixNano())%(1<<40), 36)
	}
	r.seriesNames = []string{SeriesAll}
	for op := device.SendCommand; op <= device.UpdateName; op++ { // at index op
		r.seriesNames = append(r.seriesNames, SeriesOp+op.Name())
	}
	for _, n := range names {
		r.seriesNames = append(r.seriesNames, SeriesTarget+n)
	}
	return r
}

// closeSenders closes the workers' senders that hold connections of
// their own.
func (r *run) closeSenders() {
	for _, w := range r.workers {
		for _, s := range w.sends {
			if c, ok := s.(interface{ close() }); ok {
				c.close()
			}
		}
	}
}

// makeWorkers makes Concurrency workers, each with its own random source
// and a sender to every target. With an ack log each worker owns its
// devices: device d is shard d mod shards's, and within the shard worker
// (d / shards) mod Concurrency's.
func (r *run) makeWorkers(bases []*url.URL, shards int, senders senderMaker) error {
	cfg := r.cfg
	workers := make([]*worker, cfg.Concurrency)
	r.workers = workers
	for i := range workers {
		w := &worker{run: r, id: i, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Shard)<<32|uint64(i))),
			failures: map[string]int64{}, perTarget: make([]TargetResult, len(bases)),
			part: cfg.Shard, of: shards, bucket: newWBucket(len(r.seriesNames))}
		if r.acks != nil {
			w.part, w.of = cfg.Shard+shards*i, shards*cfg.Concurrency
		}
		for _, base := range bases {
			s, err := senders.newSender(base)
			if err != nil {
				return err
			}
			w.sends = append(w.sends, s)
		}
		workers[i] = w
	}
	return nil
}

// drive runs the workers until the requests or the duration are used up
// or ctx is cancelled, with the progress line when asked for, and returns
// how long they ran. Every worker's counts are in the timeline after it.
func (r *run) drive(ctx context.Context) time.Duration {
	cfg := r.cfg
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.Duration > 0 {
		var cancelT context.CancelFunc
		stop, cancelT = context.WithTimeout(stop, cfg.Duration)
		defer cancelT()
	}
	r.start = time.Now()
	for t := range r.lastAnswer {
		r.lastAnswer[t].Store(r.start.UnixNano())
	}
	stallsDone, stopStalls := make(chan struct{}), make(chan struct{})
	go r.watchStalls(stopStalls, stallsDone)
	var progressDone chan struct{}
	if cfg.Progress != nil {
		progressDone = make(chan struct{})
		go r.progress(stop, progressDone)
	}
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, stop)
		}()
	}
	wg.Wait()
	close(stopStalls)
	<-stallsDone
	elapsed := time.Since(r.start)
	for _, w := range r.workers {
		w.bucket.flush(r.timeline, r.seriesNames)
	}
	cancel()
	if progressDone != nil {
		<-progressDone
	}
	return elapsed
}

// RedactURL is a URL given as a target without its user information, for
// messages and reports.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		u.User = nil // neither the password nor the user is printed or stored
		return u.String()
	}
	return raw
}

// proxied reports whether the environment sends requests to base through
// a proxy (HTTP_PROXY and NO_PROXY; never for loopback).
func proxied(base *url.URL) bool {
	u, err := http.ProxyFromEnvironment(&http.Request{URL: base})
	return err != nil || u != nil
}

func (cfg *Config) defaults() error {
	if cfg.Fleet == nil {
		return errors.New("no fleet")
	}
	if cfg.Rate < 0 || cfg.Rate != cfg.Rate {
		return fmt.Errorf("rate %v must be 0 (as fast as possible) or more", cfg.Rate)
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return errors.New("set a duration or a number of requests")
	}
	if cfg.Duration < 0 || cfg.Requests < 0 || cfg.Concurrency < 0 || cfg.Timeout < 0 {
		return errors.New("duration, requests, concurrency and timeout must not be negative")
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if cfg.Shards < 0 || (cfg.Shards > 0 && (cfg.Shard < 0 || cfg.Shard >= cfg.Shards)) || (cfg.Shards == 0 && cfg.Shard != 0) {
		return fmt.Errorf("shard %d of %d: the shard counts from 0 and must be below the shards", cfg.Shard, cfg.Shards)
	}
	if len(cfg.Formats) == 0 {
		cfg.Formats = []device.Format{device.JSON, device.XML}
	}
	if cfg.Mix == (Mix{}) {
		cfg.Mix = DefaultMix
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return nil
}

// run is the state the workers share: the plan, the schedule and the
// counters the progress line reads.
type run struct {
	cfg     Config
	plan    *plan
	targets []string // base URLs without user info, for results and the ack log
	acks    *ackLog  // nil without Config.AckLog
	workers []*worker
	start   time.Time
	// timeline collects the workers' buckets under seriesNames.
	timeline    *timeline
	seriesNames []string
	// down tells, per target, that its last request got no answer;
	// events are its changes.
	down []atomic.Bool
	// stalled tells, per target, that it has answered nothing for
	// StallAfter while requests to it were in flight; inflight counts
	// those, lastAnswer is when its last request ended (unix ns).
	stalled    []atomic.Bool
	inflight   []atomic.Int64
	lastAnswer []atomic.Int64
	eventsMu   sync.Mutex
	events     []Event
	// runTag starts the tags of an ack log's messages: this run's, so
	// that two runs against one target never send the same message.
	runTag  string
	issued  atomic.Int64 // requests given a slot in the schedule
	notSent atomic.Int64 // turns of the schedule skipped (lateSlot, ceiling)
	// budget is, with a rate and Requests, how many requests are still
	// to be sent: turns not sent do not count against Requests.
	budget  atomic.Int64
	ceiling *ceiling // with a rate only
	done    atomic.Int64
	errs    atomic.Int64
}

// lateSlot is how late a request may start after its time in the
// schedule of --rate: one not started by then is not sent (counted in
// Result.NotSent), as k6's constant-arrival-rate drops an iteration that
// finds no free VU. A target that stalls keeps every worker waiting; when
// it answers again the run goes on at the rate asked, from the schedule's
// present, rather than sending what it missed in a burst.
const lateSlot = 250 * time.Millisecond

// slot takes the next request's turn, k from 0, and waits for its time
// (due) when a rate is set. It reports false when the run is over. With a
// rate, turns whose time passed more than lateSlot ago are skipped and
// counted as not sent; the ceiling (at most ⌊rate⌋ requests started in
// any one second, checked right before each send) may then hold a turn
// back a little, or, past lateSlot, skip it too.
func (r *run) slot(stop context.Context, timer **time.Timer) (k int64, due time.Time, ok bool) {
	for {
		k = r.issued.Add(1) - 1
		if r.cfg.Requests > 0 && ((r.cfg.Rate <= 0 && k >= r.cfg.Requests) || (r.cfg.Rate > 0 && r.budget.Load() <= 0)) {
			return k, due, false
		}
		// The clock, not only the stop context's timer (which a busy machine
		// may run late), decides that the duration is over.
		if r.cfg.Duration > 0 && time.Since(r.start) >= r.cfg.Duration {
			return k, due, false
		}
		if r.cfg.Rate <= 0 {
			return k, due, stop.Err() == nil
		}
		at := time.Duration(float64(k) * float64(time.Second) / r.cfg.Rate)
		if r.cfg.Duration > 0 && at >= r.cfg.Duration {
			return k, due, false
		}
		due = r.start.Add(at)
		if !sleepUntil(stop, timer, due) {
			return k, due, false
		}
		now := time.Now()
		if now.Sub(due) > lateSlot {
			r.skip(due)
			continue
		}
		return k, due, stop.Err() == nil
	}
}

// skip counts a turn of the schedule that was not sent, in the second it
// was due.
func (r *run) skip(due time.Time) {
	r.notSent.Add(1)
	r.timeline.addNotSent(due.Unix())
}

// sleepUntil waits until t, or reports false when stop is done first.
func sleepUntil(stop context.Context, timer **time.Timer, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	if *timer == nil {
		*timer = time.NewTimer(d)
	} else {
		(*timer).Reset(d)
	}
	select {
	case <-(*timer).C:
		return true
	case <-stop.Done():
		return false
	}
}

// ceiling holds the starts of the last n requests (n = ⌊rate⌋, at least
// 1), so that no one-second window holds more than n starts, whatever the
// workers' timers and the machine's scheduling do: a start is taken,
// under the lock, at the moment of the send, never reserved ahead.
type ceiling struct {
	mu   sync.Mutex
	ring []time.Time
	next int
}

func newCeiling(rate float64) *ceiling {
	n := max(1, int(rate))
	return &ceiling{ring: make([]time.Time, n)}
}

// take counts a start now when the last second holds fewer than n, or
// waits until it does, and returns the start counted; it reports false,
// counting nothing, when that would be after latest or stop is done
// first.
func (c *ceiling) take(stop context.Context, timer **time.Timer, latest time.Time) (time.Time, bool) {
	for {
		c.mu.Lock()
		now := time.Now()
		free := c.ring[c.next].Add(time.Second)
		if c.ring[c.next].IsZero() || !free.After(now) {
			c.ring[c.next] = now
			c.next = (c.next + 1) % len(c.ring)
			c.mu.Unlock()
			return now, true
		}
		c.mu.Unlock()
		if free.After(latest) || !sleepUntil(stop, timer, free) {
			return time.Time{}, false
		}
	}
}

func (r *run) progress(stop context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-stop.Done():
			return
		case now := <-t.C:
			n := r.done.Load()
			fmt.Fprintf(r.cfg.Progress, "load: %3ds  %8d req/s  total %9d  errors %d\n",
				now.Sub(r.start)/time.Second, n-last, n, r.errs.Load())
			last = n
		}
	}
}

type worker struct {
	run   *run
	sends []sender // one per target
	// part and of: the worker draws the devices whose index is part mod
	// of (0 and 1: every device).
	part, of  int
	perTarget []TargetResult
	rng       *rand.Rand
	req       request
	id        int        // the worker's index
	msgs      int64      // requests drawn (with an ack log: the tags' n)
	bucket    wbucket    // the current time bucket's counts
	status    [600]int64 // by HTTP status; 0 is no answer
	failures  map[string]int64
	ops       [4][3]int64 // by device.Operation and device.Format
	n, errs   int64
}

// loop sends requests until the run is over. Requests in flight when it
// ends are finished (ctx, not stop, bounds them), so that a run's last
// requests are not counted as failures.
func (w *worker) loop(ctx, stop context.Context) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		k, due, ok := w.run.slot(stop, &timer)
		if !ok {
			return
		}
		w.one(ctx, stop, &timer, int(k%int64(len(w.sends))), due)
	}
}

// one sends one request to target t (an index in the run's targets),
// whose turn was due at due (with a rate).
func (w *worker) one(ctx, stop context.Context, timer **time.Timer, t int, due time.Time) {
	r := w.run
	start := time.Now()
	if r.acks != nil {
		// Each message one of a kind, in its worker's order, so that
		// check-acks finds each acknowledged one once, in order.
		w.msgs++
		w.req.tag = r.runTag + "s" + strconv.Itoa(r.cfg.Shard) + "w" + strconv.Itoa(w.id) + "n" + strconv.FormatInt(w.msgs, 10)
	}
	if err := r.plan.drawOwned(ctx, w.rng, start, &w.req, w.part, w.of); err != nil {
		w.count(answer{err: err}, t, start, 0)
		return
	}
	if r.ceiling != nil {
		if _, ok := r.ceiling.take(stop, timer, due.Add(lateSlot)); !ok {
			if stop.Err() == nil {
				r.skip(due)
			}
			return
		}
		if r.cfg.Requests > 0 && r.budget.Add(-1) < 0 {
			return // another worker sent the last one
		}
		start = time.Now()
	}
	r.inflight[t].Add(1)
	a := w.sends[t].send(ctx, &w.req)
	r.inflight[t].Add(-1)
	r.lastAnswer[t].Store(time.Now().UnixNano())
	if r.stalled[t].CompareAndSwap(true, false) && a.status != 0 {
		r.addEvent(Event{Time: time.Now().UTC(), Target: r.targets[t], Kind: EventAnswering})
	}
	if r.acks != nil {
		switch {
		case a.ok:
			r.acks.record(&w.req, r.targets[t], AckAcknowledged, nil)
		case a.err != nil && a.sent:
			r.acks.record(&w.req, r.targets[t], AckNoAnswer, a.err)
		case a.code == device.CodeStorageUnavailable || a.code == device.CodeStorageFailed:
			r.acks.record(&w.req, r.targets[t], AckUncertain, fmt.Errorf("%d %s", a.status, a.code))
		}
	}
	if a.err != nil && ctx.Err() != nil {
		return // interrupted by the caller: not counted as failed
	}
	w.count(a, t, start, time.Since(start))
	r.noteTarget(t, a)
}

// noteTarget records an Event when target t stops answering or answers
// again.
func (r *run) noteTarget(t int, a answer) {
	down := a.err != nil && a.status == 0
	if r.down[t].Load() == down || !r.down[t].CompareAndSwap(!down, down) {
		return
	}
	e := Event{Time: time.Now().UTC(), Target: r.targets[t], Kind: EventAnswering}
	if down {
		e.Kind, e.Error = EventStopped, describeErr(a.err)
	}
	r.addEvent(e)
}

func (r *run) addEvent(e Event) {
	r.eventsMu.Lock()
	r.events = append(r.events, e)
	r.eventsMu.Unlock()
}

// StallAfter is how long a target may answer nothing, while requests to
// it are in flight, before the run records it as stalled (EventStalled):
// a target that stops without refusing connections (a process paused, a
// partition, a full accept queue) gets no error until the requests time
// out, yet sends nothing meanwhile, and the turns of the rate it misses
// are not sent.
const StallAfter = time.Second

// watchStalls records an EventStalled for each target that answers
// nothing for StallAfter with requests in flight (dated from its last
// answer), until stop is closed; the answer that ends it records
// EventAnswering (a request that gets no answer instead records
// EventStopped, and the outage goes on).
func (r *run) watchStalls(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(StallAfter / 10)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			for i := range r.targets {
				last := time.Unix(0, r.lastAnswer[i].Load())
				n := r.inflight[i].Load()
				if n == 0 || now.Sub(last) < StallAfter || r.down[i].Load() || r.stalled[i].Load() {
					continue
				}
				if r.stalled[i].CompareAndSwap(false, true) {
					r.addEvent(Event{Time: last.UTC(), Target: r.targets[i], Kind: EventStalled,
						Error: fmt.Sprintf("answered nothing for %s with %d requests in flight", StallAfter, n)})
				}
			}
		}
	}
}

// count counts a request to target t that started at start and took took.
func (w *worker) count(a answer, t int, start time.Time, took time.Duration) {
	r := w.run
	w.ops[w.req.op][w.req.format]++
	w.n++
	w.perTarget[t].Requests++
	if a.status >= 0 && a.status < len(w.status) {
		w.status[a.status]++
	}
	w.bucket.count(r.timeline, r.seriesNames, start.Unix(), a, took, 0, int(w.req.op), 1+int(device.UpdateName)+t)
	if !a.ok {
		w.errs++
		w.perTarget[t].Errors++
		if a.err != nil {
			w.perTarget[t].NoAnswer++
		}
		r.errs.Add(1)
		kind := fmt.Sprintf("%d %s", a.status, a.code)
		if a.err != nil {
			kind = "no answer: " + describeErr(a.err)
		}
		kind = strings.TrimSpace(kind) + " (" + w.req.op.Name() + "/" + w.req.format.String() + ")"
		if _, ok := w.failures[kind]; !ok && len(w.failures) >= maxFailureKinds {
			kind = "other"
		}
		w.failures[kind]++
	}
	r.done.Add(1)
}

func (r *run) result(workers []*worker, target string, elapsed time.Duration) *Result {
	res := &Result{Target: target, Rate: r.cfg.Rate, Concurrency: r.cfg.Concurrency, Elapsed: elapsed, NotSent: r.notSent.Load(),
		Status: map[int]int64{}, Failures: map[string]int64{}, Operations: map[string]int64{},
		Start: r.start.UTC(), Timeline: r.timeline.result(), Series: map[string]*Tally{}}
	if r.cfg.Shards > 1 {
		res.Shard = fmt.Sprintf("%d/%d", r.cfg.Shard, r.cfg.Shards)
	}
	for _, b := range res.Timeline.Buckets {
		mergeSeries(res.Series, b.Series)
	}
	r.eventsMu.Lock()
	res.Events = append([]Event(nil), r.events...)
	r.eventsMu.Unlock()
	if len(r.targets) > 1 {
		res.Targets = make([]TargetResult, len(r.targets))
		for i, name := range r.targets {
			res.Targets[i].URL = name
		}
	}
	if r.acks != nil {
		r.acks.mu.Lock()
		res.Acknowledged, res.Uncertain, res.Unanswered = r.acks.acked, r.acks.uncertain, r.acks.noAnswer
		if r.acks.err != nil {
			res.AckLogError = r.acks.err.Error()
		}
		r.acks.mu.Unlock()
	}
	for _, w := range workers {
		for i, tr := range w.perTarget {
			if res.Targets != nil {
				res.Targets[i].Requests += tr.Requests
				res.Targets[i].Errors += tr.Errors
				res.Targets[i].NoAnswer += tr.NoAnswer
			}
		}
		res.Requests += w.n
		res.Errors += w.errs
		for k, v := range w.status {
			if v > 0 {
				res.Status[k] += v
			}
		}
		for k, v := range w.failures {
			res.Failures[k] += v
		}
		for op, byFormat := range w.ops {
			for f, v := range byFormat {
				if v > 0 {
					res.Operations[device.Operation(op).Name()+"/"+device.Format(f).String()] += v
				}
			}
		}
	}
	if elapsed > 0 {
		res.Throughput = float64(res.Requests) / elapsed.Seconds()
	}
	if all := res.Series[SeriesAll]; all != nil {
		res.Latency = all.Latency.Latency()
	}
	return res
}

// OK reports whether every request got success.
func (res *Result) OK() bool { return res.Errors == 0 && res.Requests > 0 }

// NotSentShare is the share of the schedule's turns that were not sent:
// NotSent over the requests sent and not sent (0 without a rate).
func (res *Result) NotSentShare() float64 {
	if res.NotSent == 0 {
		return 0
	}
	return float64(res.NotSent) / float64(res.Requests+res.NotSent)
}

// WriteText writes the result for people.
func (res *Result) WriteText(w io.Writer) {
	rate := "as fast as answered"
	if res.Rate > 0 {
		rate = fmt.Sprintf("%g/s", res.Rate)
	}
	fmt.Fprintf(w, "%d requests in %s to %s (concurrency %d, rate %s, via %s)\n",
		res.Requests, res.Elapsed.Round(time.Millisecond), res.Target, res.Concurrency, rate, res.Via)
	if res.Shard != "" {
		fmt.Fprintf(w, "  shard       %s\n", res.Shard)
	}
	fmt.Fprintf(w, "  throughput  %.1f requests/s\n", res.Throughput)
	if res.NotSent > 0 {
		fmt.Fprintf(w, "  not sent    %d, %.1f%% of the schedule (not started in time: the rate is a ceiling, missed requests are not sent later)\n",
			res.NotSent, 100*res.NotSentShare())
	}
	for i, o := range outagesOf(res) {
		label := "            "
		if i == 0 {
			label = "  outages   "
		}
		end := "to the end"
		if o.End > 0 {
			end = "for " + (time.Duration(o.End-o.Start) * time.Millisecond).Round(100*time.Millisecond).String()
		}
		at := time.UnixMilli(o.Start).Sub(res.Start).Round(100 * time.Millisecond)
		fmt.Fprintf(w, "%s  %s at +%s %s: %s\n", label, printable.String(o.Target), at, end, printable.String(o.Error))
	}
	l := res.Latency
	fmt.Fprintf(w, "  latency     p50 %s  p90 %s  p99 %s  max %s  (mean %s)\n",
		ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max), ms(l.Mean))
	fmt.Fprintf(w, "  status      %s\n", countList(res.Status, func(k int) string {
		if k == 0 {
			return "no answer"
		}
		return fmt.Sprint(k)
	}))
	fmt.Fprintf(w, "  operations  %s\n", countList(res.Operations, func(k string) string { return k }))
	for i, t := range res.Targets {
		label := "            "
		if i == 0 {
			label = "  targets   "
		}
		fmt.Fprintf(w, "%s  %s: %d requests, %d errors (%d without an answer)\n", label, t.URL, t.Requests, t.Errors, t.NoAnswer)
	}
	if res.Acknowledged > 0 || res.Uncertain > 0 || res.Unanswered > 0 {
		fmt.Fprintf(w, "  ack log     %s\n", AckCounts(res.Acknowledged, res.Uncertain, res.Unanswered))
	}
	if res.Errors == 0 {
		fmt.Fprintf(w, "  errors      0\n")
		return
	}
	fmt.Fprintf(w, "  errors      %d (every request was valid: anything but success is an error)\n", res.Errors)
	kinds := make([]string, 0, len(res.Failures))
	for k := range res.Failures {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if res.Failures[kinds[i]] != res.Failures[kinds[j]] {
			return res.Failures[kinds[i]] > res.Failures[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	for _, k := range kinds {
		fmt.Fprintf(w, "    %8d  %s\n", res.Failures[k], printable.String(k))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func countList[K int | string](m map[K]int64, name func(K) string) string {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", name(k), m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
