package conformance

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// The critical path. Checks about one device (or one gateway's messages)
// that change it go one after another: a change, its read-back, the next
// change. However many requests the rest of a run sends together, its
// wall time is bounded below by the longest such chain: its round trips
// one after another times the target's answer time. chains counts, per
// device, the round trips made one after another on it (a request or a
// read sent alone; one wave of a batch, Concurrency requests in flight at
// once), and how long they took, so that the progress line and the closing
// summary can say where the time goes.
type chains struct {
	mu  sync.Mutex
	per map[string]*chain
}

// chain is one device's round trips made one after another.
type chain struct {
	trips int
	took  time.Duration
}

// add counts n round trips one after another on key, taking took.
func (c *chains) add(key string, n int, took time.Duration) {
	if key == "" || n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.per == nil {
		c.per = map[string]*chain{}
	}
	ch := c.per[key]
	if ch == nil {
		ch = &chain{}
		c.per[key] = ch
	}
	ch.trips += n
	ch.took += took
}

// longest is the key with the most round trips one after another.
func (c *chains) longest() (string, chain, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.per))
	for k := range c.per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	best, found := "", false
	for _, k := range keys {
		if !found || c.per[k].trips > c.per[best].trips {
			best, found = k, true
		}
	}
	if !found {
		return "", chain{}, false
	}
	return best, *c.per[best], true
}

// waves is how many round trips one after another n requests take when
// sent Concurrency at a time.
func (env *Env) waves(n int) int {
	k := env.concurrency()
	return (n + k - 1) / k
}

// chainName names a chain's key for people: the device's name and type,
// or the gateway whose messages it is.
func (env *Env) chainName(key string) string {
	if len(key) > len(gatewayKey) && key[:len(gatewayKey)] == gatewayKey {
		return "the messages of gateway " + key[len(gatewayKey):]
	}
	return env.deviceName(key)
}

// CriticalPath says which device's chain was the longest, in round trips
// one after another and their time: "" before any.
func (env *Env) CriticalPath() (who string, trips int, took time.Duration) {
	key, ch, ok := env.chain.longest()
	if !ok {
		return "", 0, 0
	}
	return env.chainName(key), ch.trips, ch.took
}

// ChainNote is the progress line's part on the critical path.
func (env *Env) ChainNote() string {
	who, trips, took := env.CriticalPath()
	if who == "" {
		return ""
	}
	return fmt.Sprintf("longest chain so far: %s, %d round trips one after another (%s)", who, trips, took.Round(100*time.Millisecond))
}
