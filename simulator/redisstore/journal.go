package redisstore

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/server"
)

// journal is the shared journal: one stream capped with MAXLEN ~, each
// entry naming the replica that served it. Add does not wait for Redis:
// entries are queued and written in pipelines by one goroutine, so the
// journal costs a request no round trip; Last first waits until this
// replica's queued entries are written, so a client sees its own requests.
// When Redis cannot be reached, entries are dropped (and counted), never
// the request.
type journal struct {
	s       *Store
	queue   chan []byte
	flush   chan chan struct{}
	done    chan struct{}
	dropped atomic.Uint64
}

const journalQueue = 8192

func newJournal(s *Store) *journal {
	j := &journal{s: s, queue: make(chan []byte, journalQueue), flush: make(chan chan struct{}), done: make(chan struct{})}
	go j.run()
	return j
}

func (j *journal) streamKey() string { return j.s.key("journal") }

// Add queues an entry.
func (j *journal) Add(e server.Entry) {
	e.Replica = j.s.replica
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	select {
	case j.queue <- b:
	default:
		j.dropped.Add(1)
	}
}

func (j *journal) run() {
	defer close(j.done)
	batch := make([][]byte, 0, 512)
	for {
		select {
		case b, ok := <-j.queue:
			if !ok {
				j.write(batch)
				return
			}
			batch = append(batch[:0], b)
		more:
			for len(batch) < cap(batch) {
				select {
				case b, ok := <-j.queue:
					if !ok {
						break more
					}
					batch = append(batch, b)
				default:
					break more
				}
			}
			j.write(batch)
			batch = batch[:0]
		case ack := <-j.flush:
			for len(j.queue) > 0 && len(batch) < cap(batch) {
				batch = append(batch, <-j.queue)
			}
			j.write(batch)
			batch = batch[:0]
			close(ack)
		}
	}
}

func (j *journal) write(batch [][]byte) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*j.s.timeout)
	defer cancel()
	_, err := j.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, b := range batch {
			p.XAdd(ctx, &redis.XAddArgs{Stream: j.streamKey(), MaxLen: int64(j.s.jsize), Approx: true,
				Values: []any{"e", b, "r", j.s.replica}})
		}
		p.IncrBy(ctx, j.s.key("journal", "total"), int64(len(batch)))
		return nil
	})
	if err != nil {
		j.dropped.Add(uint64(len(batch)))
	}
}

// Read returns up to n entries of every replica, oldest first, and how
// many were ever added (server.JournalStore).
func (j *journal) Read(n int) ([]server.Entry, uint64, *device.Error) {
	ack := make(chan struct{})
	select {
	case j.flush <- ack:
		select {
		case <-ack:
		case <-time.After(2 * j.s.timeout):
		}
	case <-time.After(2 * j.s.timeout):
	}
	ctx, cancel := j.s.ctx()
	defer cancel()
	if n <= 0 || n > j.s.jsize {
		n = j.s.jsize
	}
	var xr *redis.XMessageSliceCmd
	var tc *redis.StringCmd
	_, err := j.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		xr = p.XRevRangeN(ctx, j.streamKey(), "+", "-", int64(n))
		tc = p.Get(ctx, j.s.key("journal", "total"))
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, 0, unavailable(err)
	}
	msgs := xr.Val()
	out := make([]server.Entry, 0, len(msgs))
	for i := len(msgs) - 1; i >= 0; i-- {
		raw, _ := msgs[i].Values["e"].(string)
		var e server.Entry
		if json.Unmarshal([]byte(raw), &e) == nil {
			out = append(out, e)
		}
	}
	total, _ := strconv.ParseUint(tc.Val(), 10, 64)
	return out, total, nil
}

// Clear empties the shared journal.
func (j *journal) Clear() {
	ctx, cancel := j.s.ctx()
	defer cancel()
	j.s.rdb.Del(ctx, j.streamKey())
}

// Dropped is how many entries could not be written to Redis.
func (j *journal) Dropped() uint64 { return j.dropped.Load() }

// close ends the journal's writer, waiting up to wait for the entries
// still queued to be written.
func (j *journal) close(wait time.Duration) {
	close(j.queue)
	select {
	case <-j.done:
	case <-time.After(wait):
	}
}

// Len is how many entries the shared journal keeps now (the metrics'
// journal size); 0 when Redis cannot be read.
func (j *journal) Len() int {
	ctx, cancel := j.s.ctx()
	defer cancel()
	n, _ := j.s.rdb.XLen(ctx, j.streamKey()).Result()
	return int(min(n, int64(j.s.jsize)))
}
