package server

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/store"
)

// LaggingState is a StateStore whose changes show at the reads (the admin
// API's device, messages and state, and so at an observer) some time
// after they were answered, as a faithful service's may (CONTRACT's
// preamble: "make a change visible at its observer some time after the
// answer"): each change between half the delay and the whole delay after
// it was made, drawn for each, in the order the changes were made (gwsim
// serve --effect-delay).
//
// The state behind it takes each change at once, so every answer is what
// it would be without the delay; a second copy of the fleet's state,
// which the reads show, takes the same changes when they are due.
type LaggingState struct {
	truth StateStore
	shown *store.Store
	delay time.Duration

	mu    sync.Mutex
	queue []lagged
	last  time.Time // when the newest change queued is due
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// lagged is a change waiting to show.
type lagged struct {
	due   time.Time
	apply func(*store.Store)
}

// NewLaggingState shows the changes made to truth in shown, delay after
// they were made at most; shown must start as truth's state (a store of
// the same fleet, both as loaded). Stop ends it.
func NewLaggingState(truth StateStore, shown *store.Store, delay time.Duration) *LaggingState {
	l := &LaggingState{truth: truth, shown: shown, delay: delay,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// Stop ends the goroutine that shows the changes; those not yet shown
// never are.
func (l *LaggingState) Stop() error {
	l.once.Do(func() { close(l.stop) })
	<-l.done
	return nil
}

// change makes a change in truth and, when it was made, queues it to show.
// The lock keeps truth's order and the queue's the same.
func (l *LaggingState) change(do func() *device.Error, apply func(*store.Store)) *device.Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if derr := do(); derr != nil {
		return derr
	}
	due := time.Now().Add(l.delay/2 + rand.N(l.delay/2+1))
	if due.Before(l.last) {
		due = l.last // never before a change made earlier
	}
	l.last = due
	l.queue = append(l.queue, lagged{due: due, apply: apply})
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// run shows each queued change when it is due.
func (l *LaggingState) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.mu.Lock()
		wait := time.Hour
		for len(l.queue) > 0 {
			if d := time.Until(l.queue[0].due); d > 0 {
				wait = d
				break
			}
			l.queue[0].apply(l.shown)
			l.queue[0] = lagged{}
			l.queue = l.queue[1:]
		}
		l.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-l.stop:
			return
		case <-l.wake:
		case <-timer.C:
		}
	}
}

func (l *LaggingState) Command(a, mac, sn string, t *device.Type, settings []device.Setting) *device.Error {
	kept := append([]device.Setting(nil), settings...)
	return l.change(func() *device.Error { return l.truth.Command(a, mac, sn, t, settings) },
		func(s *store.Store) { s.Command(a, mac, sn, t, kept) })
}

func (l *LaggingState) Rename(a, mac, sn, name string) *device.Error {
	return l.change(func() *device.Error { return l.truth.Rename(a, mac, sn, name) },
		func(s *store.Store) { s.Rename(a, mac, sn, name) })
}

func (l *LaggingState) Message(a, mac string, m store.Message) *device.Error {
	return l.change(func() *device.Error { return l.truth.Message(a, mac, m) },
		func(s *store.Store) { s.Message(a, mac, m) })
}

// Reset puts both states back as loaded at once, and drops the changes
// not yet shown.
func (l *LaggingState) Reset() *device.Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if derr := l.truth.Reset(); derr != nil {
		return derr
	}
	l.shown.Reset()
	clear(l.queue)
	l.queue, l.last = nil, time.Time{}
	return nil
}

func (l *LaggingState) HasGateway(a, mac string) (bool, *device.Error) {
	return l.truth.HasGateway(a, mac)
}

func (l *LaggingState) Device(mac, sn string) (store.DeviceView, bool, *device.Error) {
	d, ok := l.shown.Device(mac, sn)
	return d, ok, nil
}

func (l *LaggingState) Messages(mac string) ([]store.Message, uint64, bool, *device.Error) {
	msgs, total, ok := l.shown.Messages(mac)
	return msgs, total, ok, nil
}

func (l *LaggingState) Dump(n int) ([]store.AccountView, bool, *device.Error) {
	a, t := l.shown.Dump(n)
	return a, t, nil
}

func (l *LaggingState) Counts() (int, int, int) { return l.truth.Counts() }
