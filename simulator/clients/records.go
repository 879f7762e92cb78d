package clients

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
)

// The request's path and the fold.
//
// Observe reads an exchange into a record (what the judgements need of
// it, no credential, no body) and appends it to one of the Recorder's
// stripes: it tries a stripe drawn at random and, when another request
// holds that one, the next, so that requests do not wait on each other
// (with one api_key under many connections they all used to wait on that
// key's lock). Each record carries the number Observe gave it, from one
// counter, in the order Observe took the requests.
//
// The fold takes every request numbered up to the counter as it read it
// (see foldLocked) and applies them to the clients' reports in their
// numbers' order, under the Recorder's mu. So
// a request observed after another returned (a resend after its refusal
// was answered) is folded after it, whichever stripes they went to, and
// the judgements read them in the order they were observed, as when
// every request was folded on its own path.
//
// Nothing is dropped: a stripe grows while a fold runs. The request that
// brings a stripe to foldAt records folds them all, unless another fold
// runs (then the stripe's next request tries again), and every reader
// folds what is left before it reads; a stripe that holds mostPending
// makes its requests wait for the fold that runs, and fold.
//
// The fold does not run on a goroutine of its own: under load such a
// goroutine waited behind the busy requests while the stripes grew (their
// records then out of the caches), and at low load starting it woke an
// idle processor. Folding on the path costs the request that does it
// some microseconds, once in foldAt requests, and the same CPU as before.

// record is one exchange as the fold needs it: 128 bytes, two cache
// lines (TestRecordSize). The fold reads the records the other processor
// wrote, so their size is what moves between the caches: it was 232
// bytes with two time.Time, the answer's error as three strings and a
// request's rare oddities as two.
type record struct {
	c   *client
	seq uint64
	// at and done are Unix nanoseconds (nanos).
	at, done int64
	q        request
	a        answer
	hits     []phaseHit
}

// stripe is one buffer of records and its lock, on cache lines of its own.
// key and c are the api_key of the stripe's last record and its client:
// an app's requests find their client there without hashing its key
// (Reset clears them, with every stripe locked).
type stripe struct {
	_    [64]byte
	mu   sync.Mutex
	recs []record
	key  string
	c    *client
}

// foldAt is how many records a stripe holds before the request that
// adds one folds: small enough that the buffers stay in the caches, large
// enough that a fold's fixed cost (a lock per stripe) is shared by
// hundreds of requests.
const foldAt = 64

// mostPending is how many records a stripe may hold at most (a fold
// that runs long, a reader's): the request that adds one waits for the
// fold that runs, and then folds.
const mostPending = 64 * foldAt

// stripeCount is the number of stripes: four per processor that runs Go
// code (a power of two, at least 8), so that a free one is nearly always
// the first tried.
func stripeCount() int {
	n := max(4*runtime.GOMAXPROCS(0), 8)
	return min(1<<bits.Len(uint(n-1)), 256)
}

// add records rec of key's client on a free stripe, and starts a fold
// when that stripe is full.
func (r *Recorder) add(key string, rec *record) {
	n := uint32(len(r.stripes))
	i := rand.Uint32() & (n - 1)
	st := &r.stripes[i]
	if !st.mu.TryLock() {
		locked := false
		for j := uint32(1); j < n && !locked; j++ {
			st = &r.stripes[(i+j)&(n-1)]
			locked = st.mu.TryLock()
		}
		if !locked {
			st = &r.stripes[i]
			st.mu.Lock()
		}
	}
	if st.c == nil || st.key != key {
		st.key, st.c = key, r.client(key)
	}
	rec.c = st.c
	rec.seq = r.seq.Add(1)
	st.recs = append(st.recs, *rec)
	pending := len(st.recs)
	st.mu.Unlock()
	if pending < foldAt {
		return
	}
	if pending >= mostPending {
		r.mu.Lock()
	} else if !r.mu.TryLock() {
		return // another fold runs; a later request tries again
	}
	r.foldLocked()
	r.mu.Unlock()
}

// lockStripes locks every stripe (Reset: no request is recorded while
// the clients are forgotten).
func (r *Recorder) lockStripes() {
	for i := range r.stripes {
		r.stripes[i].mu.Lock()
	}
}

func (r *Recorder) unlockStripes() {
	for i := range r.stripes {
		r.stripes[i].mu.Unlock()
	}
}

// foldLocked folds into the clients' reports every request observed so
// far, in the order Observe took them. Called with mu held.
//
// It folds the requests numbered up to the counter as it reads it first,
// n: each of those is in a stripe by the time the fold locks that stripe
// (a request is numbered and added under its stripe's lock), so they
// are all there, and they are exactly the numbers after the last fold's.
// A request numbered after n that a stripe already holds waits for the
// next fold (carry), so that none is folded before an earlier one.
func (r *Recorder) foldLocked() {
	n := r.seq.Load()
	if n == r.folded {
		return // nothing observed since the last fold: no stripe locked
	}
	from := r.folded
	order := r.order[:0]
	order = append(order, make([]*record, n-from)...)
	place := func(rec *record) {
		order[rec.seq-from-1] = rec
	}
	// Records carried from the last fold, and each stripe's, one
	// stripe at a time (swapped with the buffer it had before).
	carried := r.carry
	r.carry = r.spare[:0]
	for i := range carried {
		if carried[i].seq <= n {
			place(&carried[i])
		} else {
			r.carry = append(r.carry, carried[i])
		}
	}
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		r.held[i], st.recs = st.recs, r.held[i][:0]
		st.mu.Unlock()
		for j := range r.held[i] {
			if rec := &r.held[i][j]; rec.seq <= n {
				place(rec)
			} else {
				r.carry = append(r.carry, *rec)
			}
		}
	}
	for _, rec := range order {
		if rec == nil {
			continue // never: every number up to n is held (see above)
		}
		rec.c.observe(r.cfg.Window, r.cfg.Auth == nil, timeOf(rec.at), timeOf(rec.done), &rec.q, &rec.a, rec.hits)
	}
	r.folded = n
	clear(order)
	r.order = order[:0]
	clear(carried)
	r.spare = carried[:0]
	for i := range r.held {
		clear(r.held[i]) // no client, error or phase kept alive by a buffer
		if cap(r.held[i]) > 2*mostPending {
			r.held[i] = nil // grown while a fold ran: let it go
		}
	}
}
