package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/link"
)

// The critical path. Checks about one device (or one gateway's messages)
// that change it go one after another: a change, its read-back, the next
// change. However many requests the rest of a run sends together, its
// wall time is bounded below by the longest such chain. Env.chain counts,
// per device, the round trips made one after another on it (a request or
// a read sent alone; one wave of a batch, Concurrency requests in flight
// at once), and how long they took (schedule.Trips), so that the progress
// line and the closing summary can say where the time goes.

// chainName names a chain's key for people: the device's name and type,
// or the gateway whose messages it is.
func (env *Env) chainName(key string) string {
	if mac, ok := strings.CutPrefix(key, link.LogPrefix); ok && mac != "" {
		return "the messages of gateway " + mac
	}
	return env.DeviceName(key)
}

// CriticalPath says which device's chain was the longest, in round trips
// one after another and their time: "" before any.
func (env *Env) CriticalPath() (who string, trips int, took time.Duration) {
	key, trips, took, ok := env.chain.Longest()
	if !ok {
		return "", 0, 0
	}
	return env.chainName(key), trips, took
}

// ChainNote is the progress line's part on the critical path.
func (env *Env) ChainNote() string {
	who, trips, took := env.CriticalPath()
	if who == "" {
		return ""
	}
	return fmt.Sprintf("longest chain so far: %s, %d round trips one after another (%s)", who, trips, took.Round(100*time.Millisecond))
}
