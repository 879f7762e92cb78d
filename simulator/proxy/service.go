package proxy

import (
	"encoding/xml"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/simulator/clients"
)

// Judgements of the service's answers, in report order.
const (
	AnswerFormat   = "answers_in_request_format"
	AnswerBody     = "answer_bodies_readable"
	RefusesInvalid = "refuses_invalid_requests"
	AcceptsValid   = "accepts_valid_requests"
	No5xx          = "no_5xx_for_bad_input"
	RetryAfter     = "retry_after_on_429"
	StatusOfCode   = "status_matches_error_code"
)

var serviceJudgements = []struct{ id, name string }{
	{AnswerFormat, "service answers JSON or XML, in the request's format"},
	{AnswerBody, "service answers status success on 200, status error with a code otherwise"},
	{RefusesInvalid, "service refuses requests that break the interface's rules"},
	{AcceptsValid, "service does not refuse as invalid a request that follows the rules"},
	{No5xx, "service never answers 5xx to bad input"},
	{RetryAfter, "service sends Retry-After with 429"},
	{StatusOfCode, "service gives each error code its CONTRACT status"},
}

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
	for _, j := range serviceJudgements {
		jj := clients.Judgement{ID: j.id, Name: j.name, Passed: s.n[j.id] == 0, Violations: s.n[j.id], Latest: s.latest[j.id]}
		if t := s.at[j.id]; !t.IsZero() {
			jj.LatestTime = t.Format(time.RFC3339)
		}
		out.Judgements = append(out.Judgements, jj)
	}
	return out
}

func xmlUnmarshal(b []byte, v any) error { return xml.Unmarshal(b, v) }
