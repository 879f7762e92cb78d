package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

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

// run sends one pipeline of EVALSHA, and with DurabilityReplicated a
// WAIT after them in the same pipeline (WAIT counts the writes of the
// connection it is sent on: a pipeline is one connection). Updates that
// find the script not loaded (a Redis restarted, flushed or failed over)
// run again with EVAL, in a second pipeline with its own WAIT.
func (b *batcher) run(batch []*pendingUpdate) {
	ctx, cancel := b.s.writeCtx()
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	confirmed := b.pipeline(ctx, batch, cmds, false)
	var retry []*pendingUpdate
	for i, p := range batch {
		c := cmds[i]
		if c == nil {
			continue
		}
		if e := c.Err(); e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT") {
			retry = append(retry, p)
			continue
		}
		p.n, p.err = c.Int64()
		if p.err == nil && p.n == 1 && !confirmed {
			p.err = errNotReplicated
		}
	}
	if len(retry) == 0 {
		return
	}
	cmds = cmds[:len(retry)]
	confirmed = b.pipeline(ctx, retry, cmds, true)
	for i, p := range retry {
		if cmds[i] == nil {
			continue
		}
		p.n, p.err = cmds[i].Int64()
		if p.err == nil && p.n == 1 && !confirmed {
			p.err = errNotReplicated
		}
	}
}

// pipeline sends the updates (EVAL with eval, else EVALSHA) and, with
// DurabilityReplicated, WAIT; it reports whether a replica confirmed
// them (always true without WAIT). When the pipeline fails before the
// updates' answers are read, each update gets the error and cmds[i] is
// nil.
func (b *batcher) pipeline(ctx context.Context, batch []*pendingUpdate, cmds []*redis.Cmd, eval bool) bool {
	confirmed, err := b.s.pipelineWait(ctx, b.s.wait, func(pl redis.Pipeliner) error {
		for i, p := range batch {
			if eval {
				cmds[i] = update.Eval(ctx, pl, []string{p.key}, p.args...)
			} else {
				cmds[i] = update.EvalSha(ctx, pl, []string{p.key}, p.args...)
			}
		}
		return nil
	})
	if err != nil && !isReplyError(err) {
		for i, p := range batch {
			cmds[i] = nil
			p.err = err
		}
		return false
	}
	return confirmed
}

// pipelineWait sends fn's commands in one pipeline and, with
// DurabilityReplicated, WAIT 1 timeout after them on the same connection
// (WAIT counts the writes of the connection it is sent on). It reports
// whether a replica confirmed them (always true without WAIT), and the
// pipeline's first error. When Redis refused the commands (a primary
// short of its min-replicas-to-write, a read-only replica: refusal), no
// WAIT is sent: it would block for its whole timeout, for writes that
// were never made, before the refusal could be answered.
func (s *Store) pipelineWait(ctx context.Context, timeout time.Duration, fn func(redis.Pipeliner) error) (bool, error) {
	client, sticky := s.rdb.(*redis.Client)
	if s.wait <= 0 || !sticky {
		// No WAIT, or a Cluster (where Open refuses DurabilityReplicated).
		_, err := s.rdb.Pipelined(ctx, fn)
		return s.wait <= 0, err
	}
	cn := client.Conn()
	defer cn.Close()
	_, err := cn.Pipelined(ctx, fn)
	if err != nil && (!isReplyError(err) || refusal(err) != "") {
		return false, err
	}
	n, werr := cn.Do(ctx, "WAIT", 1, timeout.Milliseconds()).Int64()
	return werr == nil && n >= 1, err
}

// isReplyError says whether err is Redis's answer to one command (such as
// NOSCRIPT) rather than a failure of the connection.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, context.DeadlineExceeded)
}

// close stops the loop; updates after it fail.
func (b *batcher) close() {
	close(b.done)
	<-b.stopped
}
