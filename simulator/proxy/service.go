package proxy

import (
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/oracle"
	"github.com/gwdmi/gwtools/simulator/clients"
)

// Judgements of the service's answers, in report order: the rules of the
// rule table (gatewayapi/oracle) an answer is judged by.
const (
	AnswerFormat   = oracle.RuleAnswerFormat
	AnswerBody     = oracle.RuleAnswerBody
	RefusesInvalid = oracle.RuleRefusesInvalid
	AcceptsValid   = oracle.RuleAcceptsValid
	ErrorCode      = oracle.RuleErrorCode
	No5xx          = oracle.RuleNo5xx
	StatusOfCode   = oracle.RuleStatusOfCode
	RetryAfter     = oracle.RuleRetryAfter
)

// serviceReport counts what the upstream's answers broke.
type serviceReport struct {
	upstream string
	mu       sync.Mutex
	answers  uint64
	n        map[string]uint64
	latest   map[string]string
	at       map[string]time.Time
}

func newServiceReport(upstream string) *serviceReport {
	return &serviceReport{upstream: upstream, n: map[string]uint64{}, latest: map[string]string{}, at: map[string]time.Time{}}
}

func (s *serviceReport) count() {
	s.mu.Lock()
	s.answers++
	s.mu.Unlock()
}

func (s *serviceReport) flag(id, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[id]++
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	s.latest[id], s.at[id] = msg, time.Now().UTC()
}

func (s *serviceReport) snapshot() *clients.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &clients.Service{Upstream: s.upstream, Answers: s.answers}
	for _, j := range oracle.AnswerRules {
		jj := clients.Judgement{ID: j.ID, Name: "service " + j.Name, Passed: s.n[j.ID] == 0, Violations: s.n[j.ID], Latest: s.latest[j.ID]}
		if t := s.at[j.ID]; !t.IsZero() {
			jj.LatestTime = t.Format(time.RFC3339)
		}
		out.Judgements = append(out.Judgements, jj)
	}
	return out
}
