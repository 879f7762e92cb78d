package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/report"
)

// stepper is a subcommand whose steps fail as told, recording each call.
type stepper struct {
	parse, open, close error
	code               int
	calls              []string
}

func (s *stepper) ParseFlags([]string) error {
	s.calls = append(s.calls, "parse")
	return s.parse
}

func (s *stepper) Open(context.Context) error {
	s.calls = append(s.calls, "open")
	return s.open
}

func (s *stepper) Run(context.Context) int {
	s.calls = append(s.calls, "run")
	return s.code
}

func (s *stepper) Close() error {
	s.calls = append(s.calls, "close")
	return s.close
}

// TestLifecycle: each step that fails gives its exit code and its one
// line, or none when the line is already printed; the steps after it do
// not run; Close runs exactly once, last, whatever happened.
func TestLifecycle(t *testing.T) {
	closing := errors.New("closing the ack log: disk full")
	for _, tc := range []struct {
		name   string
		s      stepper
		code   int
		calls  string
		stderr string
	}{
		{"passes", stepper{code: report.ExitPass}, report.ExitPass, "parse open run close", ""},
		{"fails", stepper{code: report.ExitFail}, report.ExitFail, "parse open run close", ""},
		{"-h", stepper{parse: flag.ErrHelp}, report.ExitPass, "parse close", ""},
		{"bad flag value", stepper{parse: errors.New("--rate must be 0 or more, not -1")}, report.ExitConfig, "parse close",
			"gwconform x: --rate must be 0 or more, not -1\n"},
		{"unknown flag, printed by parseFlags", stepper{parse: fmt.Errorf("%w: unknown flag --bogus", errUsage)}, report.ExitConfig, "parse close", ""},
		{"open fails", stepper{open: errors.New("fleet: no such file")}, report.ExitConfig, "parse open close",
			"gwconform x: fleet: no such file\n"},
		{"open fails, reasons printed", stepper{open: errUsage}, report.ExitConfig, "parse open close", ""},
		{"a target's answer escaped", stepper{open: errors.New("target unreachable: \x1b[2J")}, report.ExitConfig, "parse open close",
			"gwconform x: target unreachable: \\x1b[2J\n"},
		{"close fails after a pass", stepper{code: report.ExitPass, close: closing}, report.ExitConfig, "parse open run close",
			"gwconform x: closing the ack log: disk full\n"},
		{"close fails after a failure", stepper{code: report.ExitFail, close: closing}, report.ExitFail, "parse open run close",
			"gwconform x: closing the ack log: disk full\n"},
		{"open and close fail", stepper{open: errors.New("--target unreachable"), close: closing}, report.ExitConfig, "parse open close",
			"gwconform x: --target unreachable\ngwconform x: closing the ack log: disk full\n"},
		{"flags and close fail", stepper{parse: errors.New("--seed: bad"), close: closing}, report.ExitConfig, "parse close",
			"gwconform x: --seed: bad\ngwconform x: closing the ack log: disk full\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			s := tc.s
			code := lifecycle(context.Background(), "gwconform x", &s, nil, &stderr)
			if code != tc.code || strings.Join(s.calls, " ") != tc.calls || stderr.String() != tc.stderr {
				t.Errorf("exit %d, steps %q, stderr %q; want %d, %q, %q", code, strings.Join(s.calls, " "), stderr.String(), tc.code, tc.calls, tc.stderr)
			}
		})
	}
}

// TestLifecycleClosesOnPanic: a step that panics still has what was
// opened closed, once.
func TestLifecycleClosesOnPanic(t *testing.T) {
	s := &panicker{}
	func() {
		defer func() { recover() }()
		lifecycle(context.Background(), "gwconform x", s, nil, &bytes.Buffer{})
	}()
	if s.closed != 1 {
		t.Errorf("closed %d times after Run panicked, want 1", s.closed)
	}
}

type panicker struct{ closed int }

func (p *panicker) ParseFlags([]string) error  { return nil }
func (p *panicker) Open(context.Context) error { return nil }
func (p *panicker) Run(context.Context) int    { panic("run") }
func (p *panicker) Close() error               { p.closed++; return nil }
