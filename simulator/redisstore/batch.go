package redisstore

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// batcher sends the device updates of concurrent requests to Redis
// together: while one pipeline is in flight, the updates that arrive wait,
// and go in the next one (group commit). A request still waits for its own
// update's answer before it is acknowledged, and each update is still its
// own script, atomic on its own; what is saved is a write and a read on
// both sides per update, which is most of what an update costs on one
// machine.
type batcher struct {
	s     *Store
	queue chan *pendingUpdate
	// done is closed by close; stopped when the loop has answered its
	// last update.
	done, stopped chan struct{}
}

// maxBatch bounds one pipeline.
const maxBatch = 128

// pendingUpdate is one update waiting for its answer.
type pendingUpdate struct {
	key    string
	args   []any
	n      int64
	err    error
	answer chan struct{}
}

var pendingPool = sync.Pool{New: func() any { return &pendingUpdate{answer: make(chan struct{}, 1)} }}

func newBatcher(s *Store) *batcher {
	b := &batcher{s: s, queue: make(chan *pendingUpdate, maxBatch), done: make(chan struct{}), stopped: make(chan struct{})}
	go b.loop()
	return b
}

// update runs the update script on key with args through the next
// pipeline and returns its result.
func (b *batcher) update(key string, args []any) (int64, error) {
	p := pendingPool.Get().(*pendingUpdate)
	p.key, p.args, p.n, p.err = key, args, 0, nil
	select {
	case b.queue <- p:
	case <-b.done:
		pendingPool.Put(p)
		return 0, redis.ErrClosed
	}
	select {
	case <-p.answer:
	case <-b.stopped:
		select {
		case <-p.answer:
		default:
			return 0, redis.ErrClosed // left in the queue: not for the pool
		}
	}
	n, err := p.n, p.err
	p.key, p.args = "", nil
	pendingPool.Put(p)
	return n, err
}

func (b *batcher) loop() {
	defer close(b.stopped)
	batch := make([]*pendingUpdate, 0, maxBatch)
	for {
		select {
		case p := <-b.queue:
			batch = append(batch[:0], p)
		more:
			for len(batch) < maxBatch {
				select {
				case p := <-b.queue:
					batch = append(batch, p)
				default:
					break more
				}
			}
			b.run(batch)
			for _, p := range batch {
				p.answer <- struct{}{}
			}
		case <-b.done:
			for {
				select {
				case p := <-b.queue:
					p.err = redis.ErrClosed
					p.answer <- struct{}{}
				default:
					return
				}
			}
		}
	}
}

// run sends one pipeline of EVALSHA; updates that find the script not
// loaded (a Redis restarted or flushed) run again with EVAL.
func (b *batcher) run(batch []*pendingUpdate) {
	ctx, cancel := context.WithTimeout(context.Background(), b.s.timeout)
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	_, err := b.s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, p := range batch {
			cmds[i] = update.EvalSha(ctx, pl, []string{p.key}, p.args...)
		}
		return nil
	})
	for i, p := range batch {
		c := cmds[i]
		if c == nil {
			p.err = err
			continue
		}
		if e := c.Err(); e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT") {
			c = update.Eval(ctx, b.s.rdb, []string{p.key}, p.args...)
		}
		p.n, p.err = c.Int64()
	}
}

// close stops the loop; updates after it fail.
func (b *batcher) close() {
	close(b.done)
	<-b.stopped
}
