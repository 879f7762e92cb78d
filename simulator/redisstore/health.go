package redisstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Health is the store's server.Health: Redis answers, and still holds
// this fleet (the fleet's sha256 in PREFIX meta); and, as
// server.WriteHealth, Redis takes a change as --store-durability asks.
type Health struct{ s *Store }

// Health is the store's server.Health.
func (s *Store) Health() Health { return Health{s} }

// Name implements server.Health.
func (Health) Name() string { return "redis" }

// Check implements server.Health with one HGET.
func (h Health) Check(ctx context.Context) *device.Error {
	have, err := h.s.rdb.HGet(ctx, h.s.key("meta"), "fleet").Result()
	switch {
	case errors.Is(err, redis.Nil):
		return errFleetLost()
	case err != nil:
		return unavailable(err)
	case have != h.s.hash:
		return device.Errorf(device.CodeStorageUnavailable, "",
			"the shared store (Redis) now holds another fleet (a replica started with --store-reset replaced it): restart this replica with that fleet")
	}
	return nil
}

// maxProbeWait bounds the WAIT of the write probe, so that a readiness
// probe with a timeout of one second gets its answer.
const maxProbeWait = 900 * time.Millisecond

// CheckWrite implements server.WriteHealth: it writes what a change
// writes, the way a change does, and reads the outcome. One SET of
// PREFIX health:REPLICA (expiring after 10 s), with
// --store-durability replicated a WAIT 1 after it, in one round trip:
// refused on a read-only replica (no primary: a failover under way, or a
// --store that names a replica), refused by a primary short of its
// min-replicas-to-write, or confirmed by no replica in time.
func (h Health) CheckWrite(ctx context.Context) *device.Error {
	s := h.s
	var set *redis.StatusCmd
	var wait *redis.Cmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.Set(ctx, s.key("health", s.replica), time.Now().UnixMilli(), 10*time.Second)
		if s.wait > 0 {
			wait = waitCmd(ctx, p, min(s.wait, maxProbeWait))
		}
		return nil
	})
	if err != nil && !isReplyError(err) {
		return unavailable(err)
	}
	if err := set.Err(); err != nil {
		return writeRefused(err)
	}
	if !replicated(wait) {
		return device.Errorf(device.CodeStorageUnavailable, "",
			"no Redis replica confirmed a write within %s (--store-durability replicated): every change is refused until a replica is connected and in sync again", min(s.wait, maxProbeWait))
	}
	return nil
}

// writeRefused says why Redis refused a write.
func writeRefused(err error) *device.Error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "READONLY"):
		return device.Errorf(device.CodeStorageUnavailable, "",
			"no Redis primary: the Redis reached is a read-only replica (a failover under way, or --store names a replica); every change is refused until a primary is reached")
	case strings.HasPrefix(msg, "NOREPLICAS"):
		return device.Errorf(device.CodeStorageUnavailable, "",
			"the Redis primary refuses writes: fewer good replicas than its min-replicas-to-write; every change is refused until a replica is back")
	case strings.HasPrefix(msg, "MISCONF"), strings.HasPrefix(msg, "OOM"):
		return device.Errorf(device.CodeStorageUnavailable, "",
			"the Redis primary refuses writes (%s); every change is refused until it takes them again", strings.SplitN(msg, " ", 2)[0])
	}
	return unavailable(err)
}

// errFleetLost is the error of a Redis that answers without the fleet.
func errFleetLost() *device.Error {
	return device.Errorf(device.CodeStorageUnavailable, "",
		"the shared store (Redis) answers but no longer holds the fleet: it lost its data (restarted without persistence, or flushed); "+
			"POST /_sim/reset on any replica, or restarting one with --store-reset, loads the fleet again (the state before is lost)")
}
