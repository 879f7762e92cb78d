package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Entry is one request in the journal.
type Entry struct {
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Format     string    `json:"format,omitempty"`
	Status     int       `json:"status"`
	Code       string    `json:"error_code,omitempty"`
	Field      string    `json:"error_field,omitempty"`
	MAC        string    `json:"mac,omitempty"`
	SN         string    `json:"sn,omitempty"`
	DurationUS int64     `json:"duration_us"`
	// ID opens the request and its answer (GET /_sim/journal/{id}) while
	// the replica that served it keeps them; App is the api_key that
	// sent it, masked (its first four characters); Replayed says a
	// recording answered it (gwsim serve --replay), not the simulator.
	ID       uint64 `json:"id,omitempty"`
	App      string `json:"app,omitempty"`
	Replayed bool   `json:"replayed,omitempty"`
	// Replica names the gwsim process that served the request, when
	// replicas share one journal (a shared Config.Backend).
	Replica string `json:"replica,omitempty"`
}

// Journal is a bounded ring of the last requests. Adding takes no lock
// that all requests share: each entry draws a ticket from an atomic counter
// and fills its own slot under one of journalStripes locks, so requests are
// journaled without waiting on each other.
type Journal struct {
	entries []Entry
	// seqs[i] is the ticket+1 of the entry in entries[i]; 0 when empty.
	seqs    []uint64
	locks   [journalStripes]sync.Mutex
	total   atomic.Uint64 // tickets drawn: entries ever added
	cleared atomic.Uint64 // total at the last Clear
}

// journalStripes is the number of slot locks; slot i has lock i%stripes.
const journalStripes = 64

// DefaultJournalSize is how many requests the journal keeps.
const DefaultJournalSize = 1000

// MaxJournalSize is the largest journal gwsim keeps (--journal-size): the
// journal is allocated whole when it is made.
const MaxJournalSize = 1_000_000

// NewJournal keeps the last size entries.
func NewJournal(size int) *Journal {
	if size <= 0 {
		size = DefaultJournalSize
	}
	size = min(size, MaxJournalSize)
	return &Journal{entries: make([]Entry, size), seqs: make([]uint64, size)}
}

// Add records an entry, dropping the oldest when full.
func (j *Journal) Add(e Entry) {
	t := j.total.Add(1) - 1
	i := t % uint64(len(j.entries))
	mu := &j.locks[i%journalStripes]
	mu.Lock()
	if j.seqs[i] <= t { // a late writer never overwrites a newer entry
		j.entries[i], j.seqs[i] = e, t+1
	}
	mu.Unlock()
}

// Last returns up to n entries, oldest first, and the count ever added.
// Entries still being added are left out.
func (j *Journal) Last(n int) ([]Entry, uint64) {
	total := j.total.Load()
	size := uint64(len(j.entries))
	lo := j.cleared.Load()
	if total-lo > size {
		lo = total - size
	}
	if n > 0 && total-lo > uint64(n) {
		lo = total - uint64(n)
	}
	out := make([]Entry, 0, total-lo)
	for t := lo; t < total; t++ {
		i := t % size
		mu := &j.locks[i%journalStripes]
		mu.Lock()
		if j.seqs[i] == t+1 {
			out = append(out, j.entries[i])
		}
		mu.Unlock()
	}
	return out, total
}

// Len is how many entries the journal keeps now.
func (j *Journal) Len() int {
	n := j.total.Load() - j.cleared.Load()
	return int(min(n, uint64(len(j.entries))))
}

// Read implements JournalStore: Last, which cannot fail.
func (j *Journal) Read(n int) ([]Entry, uint64, *device.Error) {
	e, total := j.Last(n)
	return e, total, nil
}

// Clear empties the journal.
func (j *Journal) Clear() { j.cleared.Store(j.total.Load()) }
