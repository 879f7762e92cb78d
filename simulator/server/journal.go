package server

import (
	"sync"
	"time"
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
}

// Journal is a bounded ring of the last requests.
type Journal struct {
	mu      sync.Mutex
	entries []Entry
	next    int
	full    bool
	total   uint64
}

// DefaultJournalSize is how many requests the journal keeps.
const DefaultJournalSize = 1000

// NewJournal keeps the last size entries.
func NewJournal(size int) *Journal {
	if size <= 0 {
		size = DefaultJournalSize
	}
	return &Journal{entries: make([]Entry, size)}
}

// Add records an entry, dropping the oldest when full.
func (j *Journal) Add(e Entry) {
	j.mu.Lock()
	j.entries[j.next] = e
	j.next++
	if j.next == len(j.entries) {
		j.next, j.full = 0, true
	}
	j.total++
	j.mu.Unlock()
}

// Last returns up to n entries, oldest first, and the count ever added.
func (j *Journal) Last(n int) ([]Entry, uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	size := j.next
	if j.full {
		size = len(j.entries)
	}
	if n <= 0 || n > size {
		n = size
	}
	out := make([]Entry, n)
	start := (j.next - n + len(j.entries)) % len(j.entries)
	for i := 0; i < n; i++ {
		out[i] = j.entries[(start+i)%len(j.entries)]
	}
	return out, j.total
}

// Clear empties the journal.
func (j *Journal) Clear() {
	j.mu.Lock()
	j.next, j.full = 0, false
	j.mu.Unlock()
}
