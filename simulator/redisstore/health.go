package redisstore

import (
	"context"
	"errors"
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
	confirmed, err := s.pipelineWait(ctx, min(s.wait, maxProbeWait), func(p redis.Pipeliner) error {
		set = p.Set(ctx, s.key("health", s.replica), time.Now().UnixMilli(), 10*time.Second)
		return nil
	})
	if err != nil && !isReplyError(err) {
		return unavailable(err)
	}
	if err := set.Err(); err != nil {
		return unavailable(err)
	}
	if !confirmed {
		return device.Errorf(device.CodeStorageUnavailable, "",
			"no Redis replica confirmed a write within %s (--store-durability replicated): every change is refused until a replica is connected and in sync again", min(s.wait, maxProbeWait))
	}
	return nil
}

// errFleetLost is the error of a Redis that answers without the fleet.
func errFleetLost() *device.Error {
	return device.Errorf(device.CodeStorageUnavailable, "",
		"the shared store (Redis) answers but no longer holds the fleet: it lost its data (restarted without persistence, or flushed); "+
			"POST /_sim/reset on any replica, or restarting one with --store-reset, loads the fleet again (the state before is lost)")
}
