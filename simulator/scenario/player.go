package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/server"
)

// FaultSetter is what a Player plays on: gwsim's fault injection
// (*server.Server).
type FaultSetter interface {
	Faults() server.Faults
	SetFaults(server.Faults) error
}

// Tick is how often a Player looks at its timeline.
const Tick = 50 * time.Millisecond

// Player plays a Scenario. Its methods are safe for concurrent use.
type Player struct {
	sc  *Scenario
	log *slog.Logger
	// RedisLoss plays redis_loss steps; without it they are skipped: said
	// when the scenario starts, shown as skipped in its status, and never
	// counted in the client report (Phases).
	RedisLoss RedisLoss
	// OnRestart, when set, is called by POST /_sim/scenario/restart before
	// the timeline plays again from 0: gwsim starts its client report
	// afresh there, so that the counts during each fault are this run's.
	OnRestart func()

	mu       sync.Mutex
	target   FaultSetter
	base     server.Faults // the faults set by hand when the scenario started
	applied  server.Faults
	start    time.Time
	running  bool
	finished bool
	elapsed  time.Duration // when stopped
	lost     map[int]bool  // redis_loss steps already played this run
	stop     chan struct{}
	done     chan struct{}
}

// NewPlayer makes a player of sc; Attach gives it the faults to play on.
func NewPlayer(sc *Scenario, log *slog.Logger) *Player {
	if log == nil {
		log = slog.Default()
	}
	return &Player{sc: sc, log: log}
}

// Scenario is the timeline the player plays.
func (p *Player) Scenario() *Scenario { return p.sc }

// Attach sets the fault injection the player plays on.
func (p *Player) Attach(t FaultSetter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = t
}

// Autostart says whether the scenario starts with gwsim.
func (p *Player) Autostart() bool { return p.sc.Autostart == nil || *p.sc.Autostart }

// Start plays the timeline from 0; a running one is restarted.
func (p *Player) Start() error {
	p.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.target == nil {
		return errors.New("scenario: no fault injection attached")
	}
	p.base = p.target.Faults()
	p.applied = p.base
	p.start, p.running, p.finished, p.lost = time.Now(), true, false, map[int]bool{}
	p.log.Info("scenario started", "name", p.sc.Name, "steps", len(p.sc.Steps))
	for i := range p.sc.Steps {
		if why := p.skipped(&p.sc.Steps[i]); why != "" {
			p.log.Warn("scenario: a step is skipped", "step", i, "label", p.sc.Steps[i].Label(), "reason", why)
		}
	}
	if err := p.applyLocked(); err != nil {
		p.running = false
		p.target.SetFaults(p.base)
		return err
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.loop(p.stop, p.done)
	return nil
}

// Stop ends the timeline and puts back the faults that were in force
// when it started.
func (p *Player) Stop() {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	p.halt()
	p.log.Info("scenario stopped", "name", p.sc.Name)
}

// halt stops with p.mu held: the faults as they were, Redis back.
func (p *Player) halt() {
	p.elapsed = time.Since(p.start)
	p.running = false
	if len(p.lost) > 0 && p.RedisLoss != nil {
		// Redis first: on Redis, the faults are put back through it.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := p.RedisLoss(ctx, 0); err != nil {
			p.log.Error("scenario: Redis could not be unpaused", "err", err)
		}
		cancel()
	}
	if err := p.target.SetFaults(p.base); err != nil {
		p.log.Error("scenario: the faults could not be put back", "err", err)
	}
}

func (p *Player) loop(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(Tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if err := p.applyLocked(); err != nil {
				p.log.Error("scenario: a step could not be applied", "err", err)
			}
			end := p.sc.End()
			if time.Since(p.start) >= end && p.allBounded() {
				p.halt()
				p.finished = true
				p.stop = nil
				p.log.Info("scenario finished", "name", p.sc.Name)
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
		}
	}
}

func (p *Player) allBounded() bool {
	for _, s := range p.sc.Steps {
		if s.For.Duration == 0 {
			return false
		}
	}
	return true
}

// applyLocked sets the faults of the steps in force now, on top of the
// base, when they differ from those last set.
func (p *Player) applyLocked() error {
	elapsed := time.Since(p.start)
	f := p.base
	f.OfflineGateways = append([]string{}, f.OfflineGateways...)
	f.UnreachableDevices = append([]server.DeviceRef{}, f.UnreachableDevices...)
	f.SlowDevices = append([]server.SlowDevice{}, f.SlowDevices...)
	rates := map[string]float64{}
	for k, v := range f.OperationErrorRates {
		rates[k] = v
	}
	f.OperationErrorRates = rates
	for i := range p.sc.Steps {
		s := &p.sc.Steps[i]
		if !s.active(elapsed) {
			continue
		}
		if p.skipped(s) != "" {
			continue
		}
		if s.RedisLoss {
			if !p.lost[i] {
				p.lost[i] = true
				p.loseRedis(s.At.Duration + s.For.Duration - elapsed)
			}
			continue
		}
		merge(&f, s.extra)
	}
	f.Latency.Duration = min(f.Latency.Duration, server.MaxLatency)
	if err := server.CheckFaults(&f); err != nil {
		return err
	}
	if reflect.DeepEqual(f, p.applied) {
		return nil
	}
	if err := p.target.SetFaults(f); err != nil {
		return err
	}
	p.applied = f
	return nil
}

// SkipRedisLoss is why a redis_loss step is skipped on a store that is not
// Redis.
const SkipRedisLoss = "gwsim is not on Redis (--store redis://…): there is no Redis to lose"

// skipped says why a step cannot happen on this store ("" when it can).
func (p *Player) skipped(s *Step) string {
	if s.RedisLoss && p.RedisLoss == nil {
		return SkipRedisLoss
	}
	return ""
}

// Skipped lists the steps that cannot happen on this store, each with the
// reason: gwsim's banner announces them at start.
func (p *Player) Skipped() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i := range p.sc.Steps {
		if why := p.skipped(&p.sc.Steps[i]); why != "" {
			out = append(out, p.sc.Steps[i].Label()+": skipped, "+why)
		}
	}
	return out
}

func (p *Player) loseRedis(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.RedisLoss(ctx, d); err != nil {
		p.log.Error("scenario: Redis could not be paused", "err", err)
	}
}

// Phases names the steps in force now (nil when not running): the client
// report counts each request under them.
func (p *Player) Phases() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return nil
	}
	elapsed := time.Since(p.start)
	var out []string
	for i := range p.sc.Steps {
		if p.sc.Steps[i].active(elapsed) && p.skipped(&p.sc.Steps[i]) == "" {
			out = append(out, p.sc.Steps[i].Label())
		}
	}
	return out
}

// Faults are the steps that have started in this run (or the last one),
// as the client report judges the app by them: what each answers, and
// when it started and ended (End zero while it is in force). Skipped
// steps are left out. Nil before the first start.
func (p *Player) Faults() []clients.Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		return nil
	}
	elapsed := p.elapsed
	if p.running {
		elapsed = time.Since(p.start)
	}
	var out []clients.Fault
	for i := range p.sc.Steps {
		s := &p.sc.Steps[i]
		if elapsed < s.At.Duration || p.skipped(s) != "" {
			continue
		}
		f := clients.Fault{Label: s.Label(), Start: p.start.Add(s.At.Duration)}
		switch {
		case s.GatewayOffline != "":
			f.Kind, f.MAC = clients.FaultGatewayOffline, s.extra.OfflineGateways[0]
		case s.DeviceUnreachable != nil:
			f.Kind, f.MAC, f.SN = clients.FaultDeviceUnreachable, s.extra.UnreachableDevices[0].MAC, s.extra.UnreachableDevices[0].SN
		case s.DeviceSlow != nil:
			f.Kind, f.MAC, f.SN = clients.FaultDeviceSlow, s.extra.SlowDevices[0].MAC, s.extra.SlowDevices[0].SN
			f.Latency = s.extra.SlowDevices[0].Latency.Duration
		case s.ErrorRate != nil:
			f.Kind, f.Operation, f.Rate = clients.FaultErrorRate, s.ErrorRate.Operation, s.ErrorRate.Rate
		case s.Latency.Duration != 0:
			f.Kind, f.Latency = clients.FaultLatency, s.Latency.Duration
		case s.RedisLoss:
			f.Kind = clients.FaultStorage
		}
		switch end := s.At.Duration + s.For.Duration; {
		case s.For.Duration > 0 && end <= elapsed:
			f.End = p.start.Add(end)
		case !p.running:
			f.End = p.start.Add(elapsed)
		}
		out = append(out, f)
	}
	return out
}

// Status is where the scenario stands: GET /_sim/scenario.
type Status struct {
	Name     string       `json:"name"`
	Running  bool         `json:"running"`
	Finished bool         `json:"finished"`
	Elapsed  string       `json:"elapsed"`
	End      string       `json:"end"`
	Steps    []StepStatus `json:"steps"`
}

// StepStatus is one step and whether it is in force or over.
type StepStatus struct {
	Label  string `json:"label"`
	At     string `json:"at"`
	For    string `json:"for,omitempty"`
	Active bool   `json:"active"`
	Done   bool   `json:"done"`
	// Skipped says why the step cannot happen on this store (a
	// redis_loss in memory); such a step is never active.
	Skipped string `json:"skipped,omitempty"`
}

// Status says where the scenario stands.
func (p *Player) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := p.elapsed
	if p.running {
		elapsed = time.Since(p.start)
	}
	st := Status{Name: p.sc.Name, Running: p.running, Finished: p.finished, Elapsed: elapsed.Round(100 * time.Millisecond).String(),
		End: p.sc.End().String(), Steps: []StepStatus{}}
	for i := range p.sc.Steps {
		s := &p.sc.Steps[i]
		skip := p.skipped(s)
		ss := StepStatus{Label: s.Label(), At: s.At.Duration.String(), Active: p.running && s.active(elapsed) && skip == "",
			Done: skip == "" && s.For.Duration > 0 && elapsed >= s.At.Duration+s.For.Duration && (p.running || p.finished), Skipped: skip}
		if s.For.Duration > 0 {
			ss.For = s.For.Duration.String()
		}
		st.Steps = append(st.Steps, ss)
	}
	return st
}

// Routes are the scenario's admin calls, for server.Config.Admin:
// GET /_sim/scenario, POST /_sim/scenario/start, /stop and /restart.
func (p *Player) Routes() map[string]http.Handler {
	status := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(p.Status())
	}
	start := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_sim/scenario/restart" && p.OnRestart != nil {
			p.Stop()
			p.OnRestart()
		}
		if err := p.Start(); err != nil {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]any{"status": "error", "error": map[string]string{"code": "storage_unavailable", "message": err.Error()}})
			return
		}
		status(w)
	})
	return map[string]http.Handler{
		"GET /_sim/scenario":          http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { status(w) }),
		"POST /_sim/scenario/start":   start,
		"POST /_sim/scenario/restart": start,
		"POST /_sim/scenario/stop": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.Stop()
			status(w)
		}),
	}
}
