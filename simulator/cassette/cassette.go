// Package cassette records what a real implementation answered (gwsim
// proxy --record DIR) and plays it back (gwsim serve --replay DIR): each
// request is keyed by its operation, format and fields, without the
// api_key, sign and timestamp, so a recorded answer is found again however
// the request was signed. No credential, sign or timestamp is ever written.
package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// Entry is one recorded request and its answer: a file of its own in the
// cassette directory, named by its key.
type Entry struct {
	Operation string `json:"operation"`
	Format    string `json:"format"`
	// Fields are the control fields as sent, without api_key, sign and
	// timestamp; hexadecimal identifiers in lower case.
	Fields     map[string]string `json:"fields"`
	Answer     Answer            `json:"answer"`
	RecordedAt time.Time         `json:"recorded_at"`
}

// Answer is a recorded answer.
type Answer struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	RetryAfter  string `json:"retry_after,omitempty"`
	Body        string `json:"body"`
}

// left out of the key and of the cassette.
var secretFields = map[string]bool{device.FieldAPIKey: true, device.FieldSign: true, device.FieldTimestamp: true}

// Key is the name an entry is stored and found under: its operation,
// format and sorted fields, hashed.
func (e *Entry) Key() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", e.Operation, e.Format)
	for _, k := range keys {
		v := caseFree(k, e.Fields[k])
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(v), v)
	}
	return e.Operation + "-" + hex.EncodeToString(h.Sum(nil)[:10])
}

// caseFree is a field's value in the one case CONTRACT 2 reads it in: hex
// fields in lower case, enumerated values (On, Heat) in the published
// case, so that a request in another letter case finds what was recorded
// (and a cassette recorded before values were kept so).
func caseFree(key, v string) string {
	if _, hex := device.HexLen[key]; hex {
		return strings.ToLower(v)
	}
	for _, t := range device.Types {
		for i := range t.Fields {
			f := &t.Fields[i]
			if f.Kind != device.Enum || (f.Name != key && f.JSON != key) {
				continue
			}
			for _, w := range f.Values {
				if strings.EqualFold(w, v) {
					return w
				}
			}
		}
	}
	return v
}

// Credentials are what a request carried that a cassette must not.
type Credentials struct{ APIKey, Sign string }

// Scrub replaces the api_key and the sign in text (an answer that echoes
// them) with placeholders.
func (c Credentials) Scrub(s string) string {
	if len(c.Sign) >= 8 {
		s = strings.ReplaceAll(s, c.Sign, "<SIGNATURE>")
	}
	if len(c.APIKey) >= 4 {
		s = strings.ReplaceAll(s, c.APIKey, "<API_KEY>")
	}
	return s
}

// Request reads a request body as an entry without its answer; ok is false
// for a body that is not a readable request of an operation (such requests
// are neither recorded nor replayed) and for one without an api_key.
func Request(path, contentType string, body []byte) (e Entry, cred Credentials, ok bool) {
	var op device.Operation
	for _, o := range device.Operations {
		if o.Path() == path {
			op = o
		}
	}
	if op == 0 {
		return Entry{}, cred, false
	}
	format, derr := codec.FormatOf(contentType)
	if derr != nil {
		return Entry{}, cred, false
	}
	pairs, derr := codec.Decode(format, body)
	if derr != nil {
		return Entry{}, cred, false
	}
	e = Entry{Operation: op.Name(), Format: format.String(), Fields: map[string]string{}}
	for _, p := range pairs {
		v := strings.TrimSpace(p.Value.Text)
		switch p.Key {
		case device.FieldAPIKey:
			cred.APIKey = v
		case device.FieldSign:
			cred.Sign = v
		}
		if secretFields[p.Key] {
			continue
		}
		if _, hex := device.HexLen[p.Key]; hex {
			v = strings.ToLower(v)
		}
		e.Fields[p.Key] = v
	}
	return e, cred, cred.APIKey != ""
}

// Recordable says whether an answer is worth replaying: not one that
// depends on what the key leaves out (401, 403: the credentials, sign and
// timestamp) or on the moment (408, 429, 5xx).
func Recordable(status int) bool {
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusRequestTimeout,
		status == http.StatusTooManyRequests, status >= 500:
		return false
	}
	return status >= 200
}

// Active says whether an answer of this Content-Type would act in a
// browser that opened it (HTML, SVG, XHTML, script, XSLT; no type or one
// that cannot be read, which a browser may sniff as HTML). Such an answer
// is recorded, and replayed, as text/plain: a cassette never serves
// active content as it is on gwsim's origin.
func Active(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt == "" {
		return true
	}
	switch mt {
	case "text/html", "application/xhtml+xml", "image/svg+xml", "text/xsl", "application/xslt+xml",
		"text/javascript", "application/javascript", "application/ecmascript", "text/ecmascript",
		"application/x-javascript", "multipart/x-mixed-replace", "text/xml-external-parsed-entity":
		return true
	}
	return strings.Contains(mt, "html") || strings.Contains(mt, "script")
}

// inert is the Content-Type an active answer is kept and served as.
const inert = "text/plain; charset=utf-8"

// Writer writes entries into a directory, one file each.
type Writer struct {
	dir string
	mu  sync.Mutex
	n   int
	// MaxEntries and MaxBytes cap what the directory holds (the entries
	// found in it at the start included); DefaultMaxEntries and
	// MaxCassette when 0. Beyond, Record writes nothing and returns
	// ErrFull.
	MaxEntries int
	MaxBytes   int64
	sizes      map[string]int64 // file name -> bytes, of every entry in dir
	total      int64
}

// DefaultMaxEntries caps a cassette's entries when Writer.MaxEntries is 0.
const DefaultMaxEntries = 10000

// ErrFull: the cassette holds as many entries or bytes as its caps allow.
var ErrFull = errors.New("cassette: the cap on entries or bytes is reached: nothing more is recorded")

// NewWriter makes dir when missing; the entries already in it count
// toward the caps.
func NewWriter(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	w := &Writer{dir: dir, sizes: map[string]int64{}}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		if st, err := os.Lstat(f); err == nil && st.Mode().IsRegular() {
			w.sizes[filepath.Base(f)] = st.Size()
			w.total += st.Size()
		}
	}
	return w, nil
}

// Caps are the writer's entry and byte caps in force.
func (w *Writer) Caps() (entries int, bytes int64) {
	entries, bytes = w.MaxEntries, w.MaxBytes
	if entries <= 0 {
		entries = DefaultMaxEntries
	}
	if bytes <= 0 {
		bytes = MaxCassette
	}
	return entries, bytes
}

// Record writes e, replacing an earlier answer to the same request; it
// returns ErrFull, writing nothing, when e would pass a cap.
func (w *Writer) Record(e Entry) error {
	if !Recordable(e.Answer.Status) {
		return nil
	}
	if Active(e.Answer.ContentType) {
		e.Answer.ContentType = inert
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	name := e.Key() + ".json"
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sizes == nil {
		w.sizes = map[string]int64{}
	}
	maxEntries, maxBytes := w.Caps()
	old, had := w.sizes[name]
	entries := len(w.sizes)
	if !had {
		entries++
	}
	if entries > maxEntries || w.total-old+int64(len(b)) > maxBytes {
		return ErrFull
	}
	if err := safefile.WriteFile(filepath.Join(w.dir, name), b, 0o644); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	w.sizes[name] = int64(len(b))
	w.total += int64(len(b)) - old
	w.n++
	return nil
}

// Recorded is how many entries were written.
func (w *Writer) Recorded() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Player answers recorded requests with their recorded answers.
type Player struct {
	entries map[string]Entry
	// Auth, when set, must accept a request's envelope before a recorded
	// answer is given: a request with a wrong sign is answered by the
	// simulator as ever.
	Auth *auth.Authenticator
	// MaxBody bounds the request bodies read (64 KiB when 0).
	MaxBody int64
	mu      sync.Mutex
	played  int
}

// Bounds of what Load reads: each entry's file, and all of them.
const (
	MaxEntryFile = 8 << 20
	MaxCassette  = 256 << 20
)

// Load reads every entry of a cassette directory: regular files only (a
// FIFO or a device is refused at once, with its name), each at most
// MaxEntryFile bytes and all together at most MaxCassette.
func Load(dir string) (*Player, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("cassette: %s is not a directory", dir)
	}
	p := &Player{entries: map[string]Entry{}}
	total := 0
	for _, f := range files {
		b, err := safefile.ReadFile(f, MaxEntryFile)
		if err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
		if total += len(b); total > MaxCassette {
			return nil, fmt.Errorf("cassette: %s holds more than %d bytes of entries", dir, MaxCassette)
		}
		var e Entry
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("cassette %s: %v", filepath.Base(f), err)
		}
		if e.Operation == "" || e.Format == "" || e.Answer.Status < 200 || e.Answer.Status > 599 {
			return nil, fmt.Errorf("cassette %s: operation, format and an answer status from 200 to 599 are required", filepath.Base(f))
		}
		p.entries[e.Key()] = e
	}
	return p, nil
}

// Len is how many recorded requests the player knows.
func (p *Player) Len() int { return len(p.entries) }

// Played is how many requests were answered from the cassette.
func (p *Player) Played() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.played
}

// Wrap answers a recorded request from the cassette and hands every other
// one to next (the simulator).
func (p *Player) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		max := p.MaxBody
		if max <= 0 {
			max = 64 << 10
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		if err != nil || int64(len(body)) > max || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		e, _, ok := Request(r.URL.Path, r.Header.Get("Content-Type"), body)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		rec, found := p.entries[e.Key()]
		if !found || !p.authentic(r, body) {
			next.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.played++
		p.mu.Unlock()
		ct := rec.Answer.ContentType
		if Active(ct) { // a cassette written by hand, or by an older gwsim
			ct = inert
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'")
		if rec.Answer.RetryAfter != "" {
			w.Header().Set("Retry-After", rec.Answer.RetryAfter)
		}
		w.Header().Set("X-Gwsim-Replayed", "true")
		w.WriteHeader(rec.Answer.Status)
		io.WriteString(w, rec.Answer.Body)
	})
}

// authentic says whether the request's envelope passes p.Auth (always,
// without one).
func (p *Player) authentic(r *http.Request, body []byte) bool {
	if p.Auth == nil {
		return true
	}
	format, derr := codec.FormatOf(r.Header.Get("Content-Type"))
	if derr != nil {
		return false
	}
	pairs, derr := codec.Decode(format, body)
	if derr != nil {
		return false
	}
	var op device.Operation
	for _, o := range device.Operations {
		if o.Path() == r.URL.Path {
			op = o
		}
	}
	req, derr := device.Parse(op, format, pairs)
	if derr != nil {
		// Recorded answers to invalid requests (400) are replayed too: the
		// envelope is read on its own.
		return envelopeOK(p.Auth, pairs, format)
	}
	return p.Auth.Check(&req.Envelope) == nil
}

// envelopeOK checks the envelope of a request whose other fields are
// invalid: the five envelope fields parsed as a message would be.
func envelopeOK(a *auth.Authenticator, pairs []device.Pair, format device.Format) bool {
	env := make([]device.Pair, 0, 7)
	for _, p := range pairs {
		for _, name := range device.EnvelopeFields {
			if p.Key == name {
				env = append(env, p)
			}
		}
	}
	env = append(env, device.Pair{Key: device.FieldMessageType, Value: device.Value{Kind: device.String, Text: "message"}},
		device.Pair{Key: device.FieldMessageValue, Value: device.Value{Kind: device.String, Text: "x=1"}})
	req, derr := device.Parse(device.SendMessage, format, env)
	return derr == nil && a.Check(&req.Envelope) == nil
}
