// Package persist keeps gwsim's state in a file across restarts: each
// device's state and name, and each gateway's message log. The file is a
// bbolt database. A change is committed to it, fsync included, before the
// request that made it is answered, so an acknowledged change survives a
// crash or kill -9; commits of concurrent requests are grouped into one
// transaction (bbolt's Batch). A file that is damaged, of another program,
// of another format version or made for another fleet is refused, and left
// as it is.
//
// Format version 1, three buckets:
//
//	gwsim     format: "1"; fleet: Fingerprint of the fleet; fleet_desc: its
//	          size, for people; created: RFC 3339 time
//	devices   "<myservice_id>/<mac>/<sn>" -> {"type","name","state":{field: "value"}}
//	          for each device changed since the fleet was loaded or reset
//	messages  one bucket per "<myservice_id>/<mac>": message number (8 bytes
//	          big-endian, the first is 1) -> {"time","message_type","message_value"};
//	          the newest Store.MessageLimit are kept, the last number is the total
//
// A record holds the device (or message log) as it is in the store when
// its transaction runs, not what one request set: transactions may run in
// another order than the changes they follow, and whichever runs last
// writes the latest state.
package persist

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/store"
)

// FormatVersion is the version of the layout above.
const FormatVersion = "1"

var (
	bucketMeta     = []byte("gwsim")
	bucketDevices  = []byte("devices")
	bucketMessages = []byte("messages")
	keyFormat      = []byte("format")
	keyFleet       = []byte("fleet")
	keyFleetDesc   = []byte("fleet_desc")
	keyCreated     = []byte("created")
)

const (
	// lockTimeout is how long Open waits for another process's lock.
	lockTimeout = time.Second
	// batchDelay is how long a commit waits for others to join its
	// transaction (bbolt's default is 10ms), traded against fewer fsyncs
	// under load. A commit with no other in progress does not wait.
	batchDelay = 2 * time.Millisecond
)

// Kinds of refusal, for errors.Is; the errors themselves are one line
// naming the file and what to do.
var (
	ErrDamaged    = errors.New("state file damaged or not a database")
	ErrForeign    = errors.New("not a gwsim state file")
	ErrOtherFleet = errors.New("state file of another fleet")
	ErrInUse      = errors.New("state file in use")
)

type refusal struct {
	kind error
	msg  string
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

func refuse(kind error, path, format string, args ...any) error {
	msg := fmt.Sprintf("state file %s ", path) + fmt.Sprintf(format, args...)
	if kind != ErrInUse {
		msg += "; it was left untouched: give another path, or move this file away, to start fresh"
	}
	return &refusal{kind: kind, msg: strings.ReplaceAll(msg, "\n", " ")}
}

// File is an open state file bound to a store.
type File struct {
	path  string
	db    *bolt.DB
	store *store.Store
	// busy counts commits in progress.
	busy atomic.Int32
}

// Open opens the state file at path for the store's fleet and loads the
// saved state into the store, which must not be serving yet. A missing or
// empty file is created, atomically: a crash leaves no file or a whole one.
// On an error the store may be partly loaded and should be dropped.
func Open(path string, st *store.Store) (*File, error) {
	if path == "" {
		return nil, errors.New("state file: the path is empty")
	}
	fp := Fingerprint(st.Fleet())
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), err == nil && info.Mode().IsRegular() && info.Size() == 0:
		if err := create(path, info != nil, fp, st.Fleet().Describe()); err != nil {
			return nil, fmt.Errorf("state file %s: cannot create it: %v", path, err)
		}
	case err != nil:
		return nil, fmt.Errorf("state file %s: %v", path, err)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("state file %s is not a regular file", path)
	default:
		if err := load(path, st, fp); err != nil {
			return nil, err
		}
	}
	db, err := openDB(path, false)
	if err != nil {
		return nil, err
	}
	// Checked again under the write lock, in case the file was replaced
	// since it was read.
	if err := db.View(func(tx *bolt.Tx) error { return checkMeta(tx, path, fp) }); err != nil {
		db.Close()
		return nil, err
	}
	db.MaxBatchDelay = batchDelay
	return &File{path: path, db: db, store: st}, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Close closes the file; call it after the last change was synced.
func (f *File) Close() error { return f.db.Close() }

func openDB(path string, readOnly bool) (db *bolt.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			db, err = nil, refuse(ErrDamaged, path, "is damaged (%v)", p)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, refuse(ErrInUse, path, "is in use by another process (it is locked); stop that process or give another path")
	case err != nil:
		return nil, refuse(ErrDamaged, path, "is damaged or not a bbolt database (%v)", err)
	}
	return db, nil
}

// create writes a new, empty state file beside path and moves it into
// place; replace says whether path is an empty file to replace, else it
// must not exist.
func create(path string, replace bool, fp, desc string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	tmp.Close()
	defer os.Remove(name)
	db, err := bolt.Open(name, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		for k, v := range map[string]string{string(keyFormat): FormatVersion, string(keyFleet): fp,
			string(keyFleetDesc): desc, string(keyCreated): time.Now().UTC().Format(time.RFC3339)} {
			if err := m.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(bucketDevices); err != nil {
			return err
		}
		_, err = tx.CreateBucket(bucketMessages)
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if replace {
		err = os.Rename(name, path)
	} else if err = os.Link(name, path); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("it appeared while being created")
	} else if err != nil {
		// No hard links here: rename, which would replace a file made
		// in between, a narrow race only on such file systems.
		if _, serr := os.Lstat(path); serr == nil {
			return fmt.Errorf("it appeared while being created")
		}
		err = os.Rename(name, path)
	}
	if err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// checkMeta refuses a file that is not a state file of this format for
// the fleet with fingerprint fp.
func checkMeta(tx *bolt.Tx, path, fp string) error {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		var names []string
		tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if len(names) < 3 {
				names = append(names, strconv.Quote(string(name)))
			}
			return nil
		})
		what := "no buckets"
		if len(names) > 0 {
			what = "buckets " + strings.Join(names, ", ")
		}
		return refuse(ErrForeign, path, "is a bbolt database of some other program (%s; no %q bucket)", what, bucketMeta)
	}
	switch v := m.Get(keyFormat); {
	case v == nil:
		return refuse(ErrForeign, path, "is not a gwsim state file (no format version)")
	case string(v) != FormatVersion:
		return refuse(ErrForeign, path, "has format version %q; this gwsim reads version %s", v, FormatVersion)
	}
	if got := string(m.Get(keyFleet)); got != fp {
		return refuse(ErrOtherFleet, path, "was made for another fleet (%s, fingerprint %.12s), not this one (fingerprint %.12s); serve the fleet it was made for",
			m.Get(keyFleetDesc), got, fp)
	}
	if tx.Bucket(bucketDevices) == nil || tx.Bucket(bucketMessages) == nil {
		return refuse(ErrDamaged, path, "is damaged (a bucket is missing)")
	}
	return nil
}

// Fingerprint identifies a fleet's structure, what a state file's records
// refer to: every account, gateway and device with its type, name and
// initial state, in order. Keys, secrets and sign settings are not part
// of it (the state file holds no secret, not even hashed), so changing a
// secret keeps the saved state. It is hex SHA-256.
func Fingerprint(f *fleet.Fleet) string {
	h := sha256.New()
	w := bufio.NewWriterSize(h, 64<<10)
	w.WriteString("gwsim fleet 1\n")
	for _, a := range f.Accounts {
		w.WriteString("account " + strings.ToLower(a.ID) + "\n")
		for _, g := range a.Gateways {
			w.WriteString("gateway " + strings.ToLower(g.MAC) + "\n")
			for _, d := range g.Devices {
				w.WriteString("device " + strings.ToLower(d.SN) + " " + strconv.Quote(d.Type) + " " + strconv.Quote(d.Name))
				if t, ok := device.LookupType(d.Type); ok {
					st, _ := t.ParseState(d.State)
					for i := range t.Fields {
						w.WriteString(" " + t.Fields[i].Name + "=" + strconv.Quote(valueString(t, st, i)))
					}
				}
				w.WriteByte('\n')
			}
		}
	}
	w.Flush()
	return hex.EncodeToString(h.Sum(nil))
}

// valueString writes a state value as a request would: the parsed string
// gives the same value back (no exponent in a decimal).
func valueString(t *device.Type, st device.State, i int) string {
	switch v := t.Get(st, i).(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// deviceRecord is a device's record in the devices bucket.
type deviceRecord struct {
	Type  string            `json:"type"`
	Name  string            `json:"name"`
	State map[string]string `json:"state"`
}

func deviceKey(accountID, mac, sn string) []byte {
	return []byte(accountID + "/" + mac + "/" + sn)
}

func gatewayKey(accountID, mac string) []byte { return []byte(accountID + "/" + mac) }

func messageKey(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func encodeDevice(t *device.Type, st device.State, name string) ([]byte, error) {
	rec := deviceRecord{Type: t.Name, Name: name, State: make(map[string]string, len(t.Fields))}
	for i := range t.Fields {
		rec.State[t.Fields[i].Name] = valueString(t, st, i)
	}
	return json.Marshal(rec)
}

// SyncDevice commits the device's current state and name; it returns when
// they are on disk.
func (f *File) SyncDevice(accountID, mac, sn string) error {
	return f.commit(func(tx *bolt.Tx) error {
		t, st, name, ok := f.store.DeviceOf(accountID, mac, sn)
		if !ok {
			return nil
		}
		v, err := encodeDevice(t, st, name)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketDevices).Put(deviceKey(accountID, mac, sn), v)
	})
}

// SyncMessages commits the messages the gateway received since the last
// commit, and drops the ones beyond the limit; it returns when they are on
// disk.
func (f *File) SyncMessages(accountID, mac string) error {
	return f.commit(func(tx *bolt.Tx) error { return f.syncMessages(tx, accountID, mac) })
}

// commit runs fn in a write transaction and returns when it is on disk.
// Alone, it commits at once; with other commits in progress it joins a
// batch (bbolt's Batch), so that concurrent requests share one commit and
// its fsyncs. fn may run more than once.
func (f *File) commit(fn func(*bolt.Tx) error) error {
	defer f.busy.Add(-1)
	if f.busy.Add(1) == 1 {
		return f.db.Update(fn)
	}
	return f.db.Batch(fn)
}

func (f *File) syncMessages(tx *bolt.Tx, accountID, mac string) error {
	all := tx.Bucket(bucketMessages)
	b, err := all.CreateBucketIfNotExists(gatewayKey(accountID, mac))
	if err != nil {
		return err
	}
	var saved uint64
	if k, _ := b.Cursor().Last(); len(k) == 8 {
		saved = binary.BigEndian.Uint64(k)
	}
	msgs, total, ok := f.store.MessagesAfter(accountID, mac, saved)
	if !ok {
		return nil
	}
	if total < saved {
		// The file is ahead of the store: a reset whose commit failed.
		// Write the log again from the start.
		if err := all.DeleteBucket(gatewayKey(accountID, mac)); err != nil {
			return err
		}
		if b, err = all.CreateBucket(gatewayKey(accountID, mac)); err != nil {
			return err
		}
		msgs, total, _ = f.store.MessagesAfter(accountID, mac, 0)
	}
	first := total - uint64(len(msgs)) + 1
	for i, m := range msgs {
		v, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := b.Put(messageKey(first+uint64(i)), v); err != nil {
			return err
		}
	}
	limit := uint64(f.store.MessageLimit())
	if total <= limit {
		return nil
	}
	var old [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, messageKey(total-limit)) <= 0; k, _ = c.Next() {
		old = append(old, k)
	}
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Reset runs reset (the store's) and empties the file in one transaction:
// a change is either before the reset, and dropped with it, or after it,
// and kept. It returns when the file is empty on disk.
func (f *File) Reset(reset func()) error {
	return f.db.Update(func(tx *bolt.Tx) error {
		reset()
		for _, name := range [][]byte{bucketDevices, bucketMessages} {
			if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
}
