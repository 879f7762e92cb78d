// Package stopsignal makes SIGINT and SIGTERM end a program for certain.
// The first cancels the program's context, so that it stops as it
// chooses (reports written, connections drained); if it has not ended
// Grace later (it is blocked where no context reaches: a read of a pipe or
// a terminal), it is ended then. A second signal ends it at once.
package stopsignal

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Grace is how long a program may take to stop after the first signal:
// more than gwsim's 10 s for the requests in flight (server
// ShutdownTimeout), so that a clean stop is never cut short.
const Grace = 15 * time.Second

// Exit codes of a program ended by a signal, as a shell reports them.
const (
	ExitInterrupted = 130 // 128 + SIGINT
	ExitTerminated  = 143 // 128 + SIGTERM
)

// Context returns a context cancelled by the first SIGINT or SIGTERM,
// after which the program ends within grace, or at once on a second
// signal. stop releases the signals (call it when the program ends).
func Context(parent context.Context, grace time.Duration) (ctx context.Context, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		var s os.Signal
		select {
		case s = <-ch:
		case <-done:
			return
		}
		cancel()
		t := time.NewTimer(grace)
		select {
		case <-ch:
		case <-t.C:
		case <-done:
			return
		}
		os.Exit(code(s))
	}()
	return ctx, func() {
		signal.Stop(ch)
		select {
		case <-done:
		default:
			close(done)
		}
		cancel()
	}
}

func code(s os.Signal) int {
	if s == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}
