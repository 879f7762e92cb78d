package gwsimtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/scenario"
)

// Scenario is a timeline of faults playing on a Server.
type Scenario struct{ p *scenario.Player }

// ScenarioStatus is where a scenario stands (GET /_sim/scenario).
type ScenarioStatus struct {
	Name string
	// Running: the scenario plays; Finished: its last step has ended.
	Running, Finished bool
	// Elapsed is the time since it started, to a tenth of a second; End
	// is when its last step ends.
	Elapsed, End time.Duration
	Steps        []ScenarioStep
}

// ScenarioStep is one step of a scenario and where it stands.
type ScenarioStep struct {
	// Label says the step's fault ("gateway a4c138f0e2b1 offline").
	Label string
	// At is when the step starts; For how long it lasts (0: to the end).
	At, For time.Duration
	// Active: the fault is in force; Done: it has ended.
	Active, Done bool
	// Skipped says why the step cannot happen here (redis_loss: the store
	// is in memory); such a step is never active.
	Skipped string
}

// statusOf is a player's status as this package gives it. The player
// writes durations as time.Duration.String does, which
// time.ParseDuration reads back.
func statusOf(st scenario.Status) ScenarioStatus {
	d := func(s string) time.Duration {
		v, _ := time.ParseDuration(s)
		return v
	}
	out := ScenarioStatus{Name: st.Name, Running: st.Running, Finished: st.Finished, Elapsed: d(st.Elapsed), End: d(st.End)}
	for _, s := range st.Steps {
		out.Steps = append(out.Steps, ScenarioStep{Label: s.Label, At: d(s.At), For: d(s.For), Active: s.Active, Done: s.Done,
			Skipped: s.Skipped})
	}
	return out
}

// PlayScenario plays a timeline of faults (the YAML of a scenario file,
// docs/scenarios.md) from now, replacing one already playing. A step that
// names a gateway, device or operation the fleet does not have is an
// error, and nothing plays. Steps that cannot happen here (redis_loss:
// the store is in memory) are skipped and never counted.
func (s *Server) PlayScenario(yaml string) (*Scenario, error) {
	sc, err := scenario.Parse([]byte(yaml))
	if err != nil {
		return nil, fmt.Errorf("gwsimtest: scenario: %w", err)
	}
	if err := sc.CheckFleet(s.fleet); err != nil {
		return nil, fmt.Errorf("gwsimtest: scenario: %w", err)
	}
	p := scenario.NewPlayer(sc, s.log)
	p.Attach(s.sim.Server)
	p.OnRestart = s.ResetReport
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("gwsimtest: the simulator is closed")
	}
	old := s.player
	s.player = p
	s.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("gwsimtest: scenario: %w", err)
	}
	return &Scenario{p: p}, nil
}

// Status says where the scenario stands: elapsed time, steps in force,
// done and skipped.
func (sc *Scenario) Status() ScenarioStatus { return statusOf(sc.p.Status()) }

// Stop ends the scenario and puts back the faults that were in force
// when it started.
func (sc *Scenario) Stop() { sc.p.Stop() }

// Restart plays the scenario again from 0, with the client report
// started afresh (POST /_sim/scenario/restart).
func (sc *Scenario) Restart() error {
	sc.p.Stop()
	if sc.p.OnRestart != nil {
		sc.p.OnRestart()
	}
	return sc.p.Start()
}

// Wait returns when the scenario has finished (every step has a "for"
// and the last has ended), or with ctx's error.
func (sc *Scenario) Wait(ctx context.Context) error {
	t := time.NewTicker(scenario.Tick)
	defer t.Stop()
	for !sc.p.Status().Finished {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// faults are the faults of the playing scenario, for the client report.
func (s *Server) faults() []clients.Fault {
	s.mu.Lock()
	p := s.player
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Faults()
}
