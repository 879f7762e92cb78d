package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

// The model-based phase. Every check above is one instance someone
// thought of; the next bug sits in an instance no one did. After them, the
// run sends random sequences of operations over the whole space the fleet
// opens (every account, gateway and device; every subset of a type's
// fields; identifiers of other accounts and gateways in every position;
// valid and forbidden values from the oracle's generators) and compares
// every answer, and every state the observer shows, with the model
// gwconform explore keeps (package explore: its generator, model and
// shrinker). It is seeded, bounded by a budget of operations and of time,
// shrinks what it finds to a minimal sequence, and reports it in the four
// checks below, each finding at the level of the rule it breaks. Its
// requests go through the run's link like every other check's: the same
// bound of requests in flight, the same retries, the same settling of
// accepted changes before a read. It is judged with every latitude of
// CONTRACT's preamble (explore.Config.Latitudes): a replay may be refused,
// an effect may appear up to --settle later, a message log may keep only
// its newest entry, an error code the texts do not name is never judged.

// Defaults of the phase's budget.
const (
	// DefaultModelOperations bounds the operations of the phase (reads of
	// the observer included, shrinking not).
	DefaultModelOperations = 1000
	// DefaultModelShare is the phase's time as a share of the time the run
	// took before it, at least MinModelTime: against a far target, whose
	// checks take a minute, the phase takes some more seconds, not minutes.
	// A target that answers at once spends its operations long before
	// MinModelTime; one that shows changes late, or never (a bug), makes
	// reads wait up to --settle, and needs the time.
	DefaultModelShare = 0.2
	MinModelTime      = 10 * time.Second
)

// maxShrunk is how many of its findings the phase shrinks: each takes up
// to the phase's time again; the others are listed as they were met.
const maxShrunk = 4

// The phase's checks.
const (
	ModelAnswersID   = "model.answers"
	ModelEffectsID   = "model.effects"
	ModelIsolationID = "model.isolation"
	ModelContractID  = "model.contract"
)

// modelPhase is the phase as it ran once, for its four checks.
type modelPhase struct {
	once    sync.Once
	skip    string // why the phase did not run
	err     error  // it could not run
	rep     *explore.Report
	summary *report.ModelPhase
	// isolation: the fleet has another account or another gateway.
	isolation bool
}

// ModelBudget is the phase's budget as the flags set it: Operations 0 is
// DefaultModelOperations, below 0 turns the phase off; Time 0 is
// DefaultModelShare of the run's time before the phase; Seed 0 is the
// run's seed.
type ModelBudget struct {
	Operations int
	Time       time.Duration
	Seed       int64
	// Baseline is the run's (nil: none). A finding whose rule it knows
	// (report.Baseline.KnownRule) is reported with the entry's reason and
	// not judged, unless an entry names the phase's check itself: then
	// the check fails as it would, and the baseline makes that failure
	// an expected one (a baseline written from a run's failures names it).
	Baseline *report.Baseline
}

// The model-based phase, last of the run (family).
var _ = declares(900, (*Suite).declareModelPhase)

// declareModelPhase declares the phase's checks, after every other.
func (env *Suite) declareModelPhase() {
	quote := func(id string) string {
		r, ok := rules.Lookup(id)
		if !ok {
			return ""
		}
		return r.Text
	}
	first := true
	for _, c := range []struct {
		id, section, contract, title, assertion, quote, inference string
		level                                                     check.Level
		// rules are the rules of rules.yaml whose findings it reports.
		rules []string
	}{
		{ModelAnswersID, "2.3", "", "random sequences over the fleet: each answer the published interface decides",
			"Each request of random sequences over every account, gateway, device, field subset and value the oracle draws MUST get the answer the published interface decides: a valid one accepted, a forbidden one refused.",
			"The allowed values of `type` are listed below. Each type takes its own fields in addition to the envelope, `sn` and `type`.", "", check.Must, []string{"API-2.3.type-fields", "API-2.3.type-values",
				"API-2.3.on-off", "API-2.3.mode", "API-2.3.fan", "API-2.3.points", "API-2.3.code", "API-2.3.dimming", "API-2.3.opt",
				"API-2.2.name", "API-2.4.message", "API-5.authentication", "C-4.answers"}},
		{ModelEffectsID, "4.1", "", "random sequences and each field alone: what each accepted request leaves",
			"Every request of random sequences that the published interface calls valid MUST leave what it says, and nothing else, on the device it names, as the observer shows (CONTRACT 7); a command of some of a type's fields, each alone included, which only the CONTRACT allows, is judged so in model.contract.",
			oracle.QuoteCommandBody, "each field a command carries is that field of the device: the command sets it, and sets no field it does not carry (the state as the observer shows it, CONTRACT 7)", check.Must,
			[]string{"C-3.at-least-one", "C-3.rejected-changes-nothing"}},
		{ModelIsolationID, "5", "", "identifiers of another account or gateway in every position: refused, nothing changed",
			"A request carrying the myservice_id, mac, sn or api_key of another account or another gateway, in any operation, MUST be refused and MUST change nothing anywhere the observer can see.",
			oracle.QuoteSignCarried, "the key and its account authenticate a request for that account's own gateways and their devices only: an identifier of another account or gateway reaches nothing, and a device is reached through the gateway it is on (section 5)", check.Must,
			[]string{"API-5.account-gateways", "API-5.authentication"}},
		{ModelContractID, "4", "3", "random sequences over the fleet: what only the CONTRACT decides",
			"Each answer and each state of random sequences SHOULD be what the CONTRACT decides where the published interface does not: its error codes and statuses, its ranges and forms (CONTRACT 1 to 4).",
			quote("C-4.answers"), "", check.Should, []string{"C-1.unknown-key", "C-1.sign", "C-2.unexpected", "C-2.enum-case",
				"C-2.number-forms", "C-3.not-found", "C-3.at-least-one", "C-3.points-range", "C-3.opt", "C-3.name", "C-3.message_value",
				"C-3.rejected-changes-nothing", "C-4.answers"}},
	} {
		m := check.Meta{ID: c.id, Level: c.level, Section: c.section, Title: capital(c.title), Assertion: c.assertion,
			Tags: []string{"model"}, Traits: check.Traits{Shared: true, Cost: 10}}
		if c.id == ModelEffectsID {
			m.Tags = append(m.Tags, "effect") // skipped, as every effect check, without an observer
		}
		for _, r := range c.rules {
			m.Tags = append(m.Tags, report.RuleTag+r)
		}
		if c.quote != "" {
			m.Assertion += " The sentence it rests on (" + oracle.Texts(c.quote) + "): “" + c.quote + "”"
			m.Quote = c.quote
			if c.inference != "" {
				m.Assertion += "; read with it: " + c.inference + "."
				m.Inference = c.inference
			}
		}
		if c.level != check.Must {
			m.Contract = c.contract
		}
		id := c.id
		if first {
			// The first of the phase's checks to run runs the phase.
			env.Expect(id, env.modelExpected)
			first = false
		}
		env.It(m, func(ctx context.Context) { env.modelCheck(ctx, id) })
	}
}

// modelExpected is the time the phase is expected to take before it has
// run, for the schedule's estimate of the time left: its time budget,
// which with no --model-time is a share of the run's time so far.
func (env *Suite) modelExpected() time.Duration {
	b := env.budget
	switch {
	case b.Operations < 0 || env.DryRun:
		return 0
	case b.Time > 0:
		return b.Time
	}
	d := MinModelTime
	if !env.Started().IsZero() {
		d = max(d, time.Duration(float64(time.Since(env.Started()))*DefaultModelShare))
	}
	return d
}

// checkOf is the check of the phase that reports f.
func checkOf(f *explore.Finding) string {
	switch {
	case f.Level != explore.MUST:
		return ModelContractID
	case isolationFinding(f):
		return ModelIsolationID
	case stateFinding(f):
		return ModelEffectsID
	}
	return ModelAnswersID
}

// isolationFinding says whether a finding's shrunk sequence needs a
// request with an identifier of another account or gateway.
func isolationFinding(f *explore.Finding) bool {
	for _, op := range f.Ops {
		if strings.Contains(op.Origin, "other-") {
			return true
		}
	}
	return false
}

// placeState names, for a state finding, the rule its shrunk sequence
// shows broken rather than the general one: an identifier of another
// account or gateway that changed what it names (API-5.account-gateways,
// at MUST), or accepted commands that changed a field they did not carry
// or left one they did (CONTRACT 3: "fields absent keep their value").
func placeState(f *explore.Finding) {
	if !stateFinding(f) || f.Rule != "C-3.rejected-changes-nothing" {
		return
	}
	rule := ""
	switch {
	case isolationFinding(f) && f.Level == explore.MUST:
		rule = "API-5.account-gateways"
	case !isolationFinding(f):
		rule = "C-3.at-least-one"
		for _, s := range f.Steps {
			if !s.Op.IsRead() && (s.Op.Kind != explore.Command || s.Expected != "200 success") {
				rule = ""
			}
		}
	}
	if rule != "" {
		f.Rule, f.Quote = rule, explore.RuleQuote(rule)
	}
}

// stateFinding says whether a finding is about what the observer showed.
func stateFinding(f *explore.Finding) bool {
	return f.Disagreement != nil && f.Disagreement.Op.IsRead()
}

// modelCheck runs the phase (once, for the first of its checks) and
// judges the findings that are check id's (checkOf).
func (env *Suite) modelCheck(ctx context.Context, id string) {
	p := &env.model
	p.once.Do(func() { env.runModelPhase(ctx, p) })
	t := trial.From(ctx)
	switch {
	case p.skip != "":
		t.Skip(p.skip)
	case p.err != nil:
		if env.Link().Stopped() {
			link.Stop(ctx, "the model-based phase: "+p.err.Error())
		}
		t.Fail("the model-based phase could not run: " + p.err.Error())
	}
	if id == ModelEffectsID && env.Observer == "" {
		t.Skip(env.ObserveSkip())
	}
	if id == ModelIsolationID && !p.isolation {
		t.Skip("the fleet has one account with one gateway: no identifier of another account or gateway to try (not covered)")
	}
	// A finding fails the check only when its shrunk sequence, sent
	// again, showed it again. One not shrunk, or not reproduced, may be a
	// latitude the texts leave a faithful service (a change shown late,
	// another sender's request in the same second): it is reported, not
	// judged; gwconform explore hunts it further.
	var mine []*explore.Finding
	for _, f := range p.rep.Findings {
		if checkOf(f) != id {
			continue
		}
		if f.ShrinkRuns == 0 && len(f.Steps) == 0 || !f.Reproducible {
			observe(ctx, "the model-based phase saw, once and not reproduced (not judged): %s %s, %s (seed %d, round %d)",
				f.Level, f.Rule, findingWhy(f), p.rep.Seed, f.Round)
			continue
		}
		if f.Known != "" && !env.budget.Baseline.Excuses(id) {
			observe(ctx, "the model-based phase met a known failure (baseline: %s), not counted: %s %s, %s (seed %d, round %d)",
				f.Known, f.Level, f.Rule, findingWhy(f), p.rep.Seed, f.Round)
			continue
		}
		if stateFinding(f) && env.Link().Lagged() {
			// The phase's reads wait for the changes the model expects,
			// not for every change still on its way: on a target that
			// shows changes late, what it reads of a device is reported,
			// not judged (the effect checks judge state there).
			observe(ctx, "the model-based phase read, on a target that shows changes late (not judged): %s %s, %s (seed %d, round %d)",
				f.Level, f.Rule, findingWhy(f), p.rep.Seed, f.Round)
			continue
		}
		mine = append(mine, f)
	}
	t.By(fmt.Sprintf("the model-based phase: seed %d, %d operations in %s", p.rep.Seed, p.rep.Operations, p.rep.Elapsed))
	if len(mine) == 0 {
		return
	}
	var b strings.Builder
	for i, f := range mine {
		if i == 0 {
			// The first finding's shrunk sequence, as sent: gwconform
			// replay report.json <check> sends it again.
			for _, s := range f.Steps {
				if s.Exchange.Method != "" {
					env.Link().Record(ctx, s.Exchange)
				}
			}
		}
		fmt.Fprintf(&b, "%d. %s %s, met %d time(s): %s\n   %s\n", i+1, f.Level, f.Rule, f.Count, findingWhy(f), f.Quote)
		switch {
		case f.ShrinkRuns == 0 && len(f.Steps) == 0:
			fmt.Fprintf(&b, "   not shrunk (the phase shrinks its first %d findings), %d operation(s) (seed %d, round %d), the last: %s\n",
				maxShrunk, f.Original, p.rep.Seed, f.Round, printable.String(f.Ops[len(f.Ops)-1].String()))
		default:
			fmt.Fprintf(&b, "   shrunk from %d operation(s) to %d (seed %d, round %d)", f.Original, len(f.Ops), p.rep.Seed, f.Round)
			if !f.Reproducible {
				b.WriteString(", NOT reproduced when run again")
			}
			b.WriteString(":\n")
		}
		for j, s := range f.Steps {
			mark := " "
			if s.Disagrees {
				mark = "!"
			}
			fmt.Fprintf(&b, "   %s %2d. %s\n         expected %s\n         got      %s\n", mark, j+1, printable.String(s.Op.String()), printable.String(s.Expected), printable.String(s.Got))
		}
	}
	t.Fail(fmt.Sprintf("the target and the model disagree, %d distinct finding(s):\n%s", len(mine), strings.TrimRight(b.String(), "\n")))
}

func findingWhy(f *explore.Finding) string {
	if f.Disagreement == nil {
		return f.Kind
	}
	return printable.String(f.Disagreement.Why)
}

// runModelPhase runs the phase once, within its budget, and keeps its
// report and its summary for the reports.
func (env *Suite) runModelPhase(ctx context.Context, p *modelPhase) {
	b := env.budget
	switch {
	case b.Operations < 0:
		p.skip = "the model-based phase was turned off (--model-operations 0)"
	case env.DryRun:
		p.skip = "dry run: not sent"
	}
	if p.skip != "" {
		return
	}
	ops := b.Operations
	if ops == 0 {
		ops = DefaultModelOperations
	}
	budget := b.Time
	if budget == 0 {
		budget = MinModelTime
		if !env.Started().IsZero() {
			budget = max(budget, time.Duration(float64(time.Since(env.Started()))*DefaultModelShare))
		}
	}
	seed := b.Seed
	if seed == 0 {
		seed = env.Seed
	}
	w, err := explore.NewWorld(env.Fleet)
	if err != nil {
		p.err = err
		return
	}
	if env.Workers > 1 {
		// The other workers change their own devices of the tested
		// gateway, and append to its messages, meanwhile: the phase
		// sends to this worker's devices and every other gateway's only,
		// and reads no message log.
		tested, mine := strings.ToLower(env.Target.MAC), map[string]bool{}
		for _, d := range env.Target.Devices {
			mine[strings.ToLower(d.SN)] = true
		}
		w.Keep(func(mac, sn string) bool { return mac != tested || mine[sn] })
	}
	presign := env.Fleet.Scheme() == auth.MD5 && len(env.Fleet.SignCommand) == 0
	tgt := explore.NewVia(env.Client.Base().String(), env.Fleet, nil, linkVia{env: env, presign: presign}, env.Observer != "")
	cfg := explore.Config{Target: tgt, World: w, Seed: seed, Operations: ops, Duration: budget,
		ShrinkBudget: max(budget, 2*time.Second), ShrinkUnsettled: true, RestoreRound: true, ShrinkTimeApart: true, GoOn: true, MaxShrunk: maxShrunk, NoLogReads: env.Workers > 1, Space: true, MinKept: 1, Latitudes: true}
	if bl := b.Baseline; bl != nil {
		cfg.Known = func(rule string) string { return bl.KnownRule(rule, time.Now()) }
	}
	x, err := explore.New(cfg)
	if err != nil {
		p.err = err
		return
	}
	var saved []explore.Saved
	if env.Observer != "" {
		saved = tgt.Snapshot(ctx, w)
	}
	start := time.Now()
	rep, err := x.Run(ctx)
	took := time.Since(start)
	if err != nil {
		p.err = err
		return
	}
	if env.Observer != "" {
		// Every device, not only those the phase sent to: a bug may have
		// changed one it only named.
		var all [][2]string
		for _, s := range saved {
			all = append(all, [2]string{s.MAC, s.SN})
		}
		tgt.Restore(ctx, saved, all)
	}
	p.isolation = len(w.Accounts) > 1 || len(w.Gateways()) > 1
	for _, f := range rep.Findings {
		placeState(f)
	}
	p.rep = rep
	p.summary = modelSummary(rep, x.Coverage(), ops, budget, took)
}

// modelSummary is the phase as the reports show it.
func modelSummary(rep *explore.Report, cov []explore.Dimension, ops int, budget, took time.Duration) *report.ModelPhase {
	s := &report.ModelPhase{Seed: rep.Seed, BudgetOperations: ops, BudgetSeconds: budget.Seconds(),
		Operations: rep.Operations, Seconds: took.Seconds(), Rounds: rep.Rounds, Notes: rep.Notes}
	for _, d := range cov {
		s.Coverage = append(s.Coverage, report.ModelDimension{Name: d.Name, Reached: d.Reached, Total: d.Total, NotReached: d.Missing})
	}
	for _, f := range rep.Findings {
		mf := report.ModelFinding{Level: f.Level, Rule: f.Rule, Quote: f.Quote, Count: f.Count, Reproducible: f.Reproducible,
			Original: f.Original, Why: findingWhy(f), Check: checkOf(f)}
		var masked []explore.Op
		for _, op := range f.Ops {
			mf.Operations = append(mf.Operations, maskedOp(op))
			if op.Key != "" {
				op.Key = client.MaskAPIKey(op.Key)
			}
			masked = append(masked, op)
		}
		mf.Sequence, _ = json.Marshal(masked)
		s.Findings = append(s.Findings, mf)
	}
	return s
}

// maskedOp is an operation on one line with its api_key masked.
func maskedOp(op explore.Op) string {
	if op.Key != "" {
		op.Key = client.MaskAPIKey(op.Key)
	}
	return printable.String(op.String())
}

// linkVia sends the phase's requests and reads through the run's link.
type linkVia struct {
	env *Suite
	// presign signs each request by md5 with the secret of the api_key
	// it carries (the run's signer knows the tested account's only).
	presign bool
}

func (v linkVia) Send(ctx context.Context, req client.Request) (*client.Response, client.Exchange, error) {
	if v.presign && req.Sign == client.SignAuto {
		sign, err := explore.FleetSigner(v.env.Fleet).Sign(ctx, req.Fields)
		if err != nil {
			return nil, client.Exchange{}, err
		}
		for i := range req.Fields {
			if req.Fields[i].Key == device.FieldSign {
				req.Fields[i].Value = sign
			}
		}
		req.Sign = client.SignKeep
	}
	return v.env.Link().RoundTrip(ctx, req)
}

func (v linkVia) ReadDevice(ctx context.Context, mac, sn string, settle bool) (explore.DeviceState, error) {
	read := v.env.Link().ReadDeviceNow
	if settle {
		read = v.env.Link().ReadDevice
	}
	d, err := read(ctx, mac, sn)
	if err != nil {
		return explore.DeviceState{}, err
	}
	return explore.DeviceFromValues(d.Name, d.State), nil
}

func (v linkVia) ReadMessages(ctx context.Context, mac string, settle bool) ([]explore.Msg, error) {
	read := v.env.Link().ReadLogNow
	if settle {
		read = v.env.Link().ReadLog
	}
	l, err := read(ctx, mac)
	if err != nil {
		return nil, err
	}
	out := make([]explore.Msg, 0, len(l.Recent))
	for _, m := range l.Recent {
		out = append(out, explore.Msg{Type: m.Type, Value: m.Value})
	}
	return out, nil
}
