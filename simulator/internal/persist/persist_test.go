package persist_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/internal/persist"
	"github.com/gwdmi/gwtools/simulator/simtest"
	"github.com/gwdmi/gwtools/simulator/store"
)

const messageLimit = 5

func open(t testing.TB, path string, f *fleet.Fleet) (*store.Store, *persist.File) {
	t.Helper()
	st := store.New(f, messageLimit)
	pf, err := persist.Open(path, st)
	if err != nil {
		t.Fatal(err)
	}
	return st, pf
}

func dump(st *store.Store) []store.AccountView {
	a, _ := st.Dump(0)
	return a
}

// setting parses one field value of a type, as a request would.
func setting(t *testing.T, typ *device.Type, field, value string) device.Setting {
	t.Helper()
	f, i, ok := typ.Field(field)
	if !ok {
		t.Fatalf("%s has no %s", typ.Name, field)
	}
	s, derr := f.Parse(i, device.Str(value))
	if derr != nil {
		t.Fatal(derr)
	}
	return s
}

// change applies changes to every device of the test fleet (each type,
// a text, a decimal without exponent's help, names) and messages beyond
// the limit, syncing each.
func change(t *testing.T, st *store.Store, pf *persist.File) {
	t.Helper()
	values := map[string]string{"io": "on", "opt": "eco mode", "Relay1": "On", "Relay2": "off", "mode": "heat",
		"cooling_point": "0.00001", "heating_point": "-49.5", "fan": "on", "code": "4", "dimming": "7"}
	f := st.Fleet()
	for _, a := range f.Accounts {
		for _, g := range a.Gateways {
			for i, d := range g.Devices {
				typ, _ := device.LookupType(d.Type)
				var set []device.Setting
				for _, fl := range typ.Fields {
					set = append(set, setting(t, typ, fl.Name, values[fl.Name]))
				}
				if derr := st.Command(a.ID, g.MAC, d.SN, typ, set); derr != nil {
					t.Fatal(derr)
				}
				if err := pf.SyncDevice(a.ID, g.MAC, d.SN); err != nil {
					t.Fatal(err)
				}
				if i%2 == 0 {
					st.Rename(a.ID, g.MAC, d.SN, fmt.Sprintf("Renamed «%d» \"x\"", i))
					if err := pf.SyncDevice(a.ID, g.MAC, d.SN); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := range 2*messageLimit + 1 {
				m := store.Message{Time: time.Now().UTC().Round(0), Type: "message", Value: fmt.Sprintf("n=%d", i)}
				if derr := st.Message(a.ID, g.MAC, m); derr != nil {
					t.Fatal(derr)
				}
				if err := pf.SyncMessages(a.ID, g.MAC); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestRoundTrip: every change synced is back after a restart, message logs
// bounded as in memory, with their totals.
func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, pf := open(t, path, simtest.Fleet())
	change(t, st, pf)
	want := dump(st)
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	st2, pf2 := open(t, path, simtest.Fleet())
	defer pf2.Close()
	if got := dump(st2); !reflect.DeepEqual(got, want) {
		t.Errorf("after a restart:\n%+v\nwant\n%+v", got, want)
	}
	msgs, total, _ := st2.Messages(simtest.MACA)
	if total != 2*messageLimit+1 || len(msgs) != messageLimit || msgs[0].Value != fmt.Sprintf("n=%d", messageLimit+1) {
		t.Errorf("messages %d of %d: %+v", len(msgs), total, msgs)
	}
	// Nothing beyond the limit is kept on disk either.
	pf2.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("messages")).Bucket([]byte(simtest.AccountA + "/" + simtest.MACA))
		if n := b.Stats().KeyN; n != messageLimit {
			t.Errorf("%d messages on disk, want %d", n, messageLimit)
		}
		return nil
	})
}

// TestConcurrentSyncs: many goroutines change and sync at once (grouped
// by Batch); the file ends equal to memory.
func TestConcurrentSyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f := fleet.Generate(3, 4, 25)
	st, pf := open(t, path, f)
	a := f.Accounts[0]
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				g := a.Gateways[(w+i)%len(a.Gateways)]
				d := g.Devices[(w*7+i)%len(g.Devices)]
				st.Rename(a.ID, g.MAC, d.SN, fmt.Sprintf("w%d i%d", w, i))
				if err := pf.SyncDevice(a.ID, g.MAC, d.SN); err != nil {
					t.Error(err)
				}
				st.Message(a.ID, g.MAC, store.Message{Time: time.Unix(int64(i), 0).UTC(), Type: "message", Value: fmt.Sprintf("w%d=%d", w, i)})
				if err := pf.SyncMessages(a.ID, g.MAC); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	want := dump(st)
	pf.Close()
	st2, pf2 := open(t, path, f)
	defer pf2.Close()
	if got := dump(st2); !reflect.DeepEqual(got, want) {
		t.Error("after a restart the state differs from memory")
	}
}

// TestReset: a reset empties the file with the store; what follows it is kept.
func TestReset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, pf := open(t, path, simtest.Fleet())
	fresh := dump(st)
	change(t, st, pf)
	if err := pf.Reset(st.Reset); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dump(st), fresh) {
		t.Fatal("the store was not reset")
	}
	st.Rename(simtest.AccountB, simtest.MACB, simtest.SN('b', 0), "After")
	pf.SyncDevice(simtest.AccountB, simtest.MACB, simtest.SN('b', 0))
	st.Message(simtest.AccountA, simtest.MACA, store.Message{Time: time.Unix(1, 0).UTC(), Type: "message", Value: "after=1"})
	pf.SyncMessages(simtest.AccountA, simtest.MACA)
	want := dump(st)
	pf.Close()
	st2, pf2 := open(t, path, simtest.Fleet())
	defer pf2.Close()
	if got := dump(st2); !reflect.DeepEqual(got, want) {
		t.Errorf("after reset and restart:\n%+v\nwant\n%+v", got, want)
	}
}

func write(t *testing.T, path string, b []byte) []byte {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// boltFile makes a bbolt file and lets fill write into it.
func boltFile(t *testing.T, path string, fill func(tx *bolt.Tx) error) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fill); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, _ := os.ReadFile(path)
	return b
}

// TestRefusals: a file that is not ours, or not for this fleet, is refused
// with one line naming it, and left byte for byte as it was.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	random := make([]byte, 64<<10)
	rand.Read(random)
	other := filepath.Join(dir, "other-fleet.db")
	_, pf := open(t, other, fleet.Generate(1, 1, 3))
	pf.Close()
	damagedRecord := filepath.Join(dir, "damaged-record.db")
	st, pf := open(t, damagedRecord, simtest.Fleet())
	change(t, st, pf)
	pf.Close()
	db, _ := bolt.Open(damagedRecord, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("devices")).Put([]byte(simtest.AccountA+"/"+simtest.MACA+"/"+simtest.SN('a', 5)), []byte(`{"type":"Light Dimmer","name":"x","state":{"dimming":"500"}}`))
	})
	db.Close()
	unknownDevice := filepath.Join(dir, "unknown-device.db")
	_, pf = open(t, unknownDevice, simtest.Fleet())
	pf.Close()
	db, _ = bolt.Open(unknownDevice, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("devices")).Put([]byte(simtest.AccountA+"/"+simtest.MACA+"/"+strings.Repeat("f", 32)), []byte(`{"type":"Light Dimmer","name":"x","state":{"dimming":"50"}}`))
	})
	db.Close()

	for _, tc := range []struct {
		name string
		make func(path string) []byte
		kind error
		says string
	}{
		{"random bytes", func(p string) []byte { return write(t, p, random) }, persist.ErrDamaged, "damaged or not a bbolt database"},
		{"short text", func(p string) []byte { return write(t, p, []byte("hello\n")) }, persist.ErrDamaged, "damaged"},
		{"foreign bbolt", func(p string) []byte {
			return boltFile(t, p, func(tx *bolt.Tx) error {
				b, _ := tx.CreateBucket([]byte("widgets"))
				return b.Put([]byte("k"), []byte("v"))
			})
		}, persist.ErrForeign, `"widgets"`},
		{"empty bbolt", func(p string) []byte { return boltFile(t, p, func(*bolt.Tx) error { return nil }) }, persist.ErrForeign, "no buckets"},
		{"other format version", func(p string) []byte {
			return boltFile(t, p, func(tx *bolt.Tx) error {
				b, _ := tx.CreateBucket([]byte("gwsim"))
				return b.Put([]byte("format"), []byte("9"))
			})
		}, persist.ErrForeign, `format version "9"`},
		{"no format version", func(p string) []byte {
			return boltFile(t, p, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("gwsim")); return err })
		}, persist.ErrForeign, "no format version"},
		{"other fleet", func(p string) []byte { b, _ := os.ReadFile(other); return write(t, p, b) }, persist.ErrOtherFleet, "another fleet (1 account, 1 gateway, 3 devices"},
		{"damaged record", func(p string) []byte { b, _ := os.ReadFile(damagedRecord); return write(t, p, b) }, persist.ErrDamaged, "dimming"},
		{"unknown device", func(p string) []byte { b, _ := os.ReadFile(unknownDevice); return write(t, p, b) }, persist.ErrDamaged, "ffffffff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			before := tc.make(p)
			infoBefore, _ := os.Stat(p)
			_, err := persist.Open(p, store.New(simtest.Fleet(), 0))
			if !errors.Is(err, tc.kind) {
				t.Fatalf("Open: %v, want %v", err, tc.kind)
			}
			msg := err.Error()
			if !strings.Contains(msg, p) || !strings.Contains(msg, tc.says) || strings.Contains(msg, "\n") ||
				!strings.Contains(msg, "left untouched") {
				t.Errorf("message %q: want one line naming the file, saying %q and how to start fresh", msg, tc.says)
			}
			after, _ := os.ReadFile(p)
			infoAfter, _ := os.Stat(p)
			if !bytes.Equal(after, before) || !infoAfter.ModTime().Equal(infoBefore.ModTime()) {
				t.Error("the file was changed")
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 20 {
				t.Errorf("left files behind: %d", len(entries))
			}
		})
	}
}

// TestCreate: a missing or empty file is created; a directory, a missing
// parent or a file in use are refused.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	write(t, empty, nil)
	for _, p := range []string{filepath.Join(dir, "new.db"), empty} {
		_, pf := open(t, p, simtest.Fleet())
		pf.Close()
		_, pf = open(t, p, simtest.Fleet()) // and is ours on the next start
		pf.Close()
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("temporary files left: %v", entries)
	}
	for _, p := range []string{dir, filepath.Join(dir, "missing", "x.db"), ""} {
		if _, err := persist.Open(p, store.New(simtest.Fleet(), 0)); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	p := filepath.Join(dir, "new.db")
	_, pf := open(t, p, simtest.Fleet())
	defer pf.Close()
	if _, err := persist.Open(p, store.New(simtest.Fleet(), 0)); !errors.Is(err, persist.ErrInUse) || !strings.Contains(err.Error(), p) {
		t.Errorf("a file in use: %v", err)
	}
}

// TestFingerprint: the fleet's structure counts, its secrets do not.
func TestFingerprint(t *testing.T) {
	base := persist.Fingerprint(simtest.Fleet())
	if base != persist.Fingerprint(simtest.Fleet()) || len(base) != 64 {
		t.Fatal("not stable")
	}
	secret := simtest.Fleet()
	secret.Accounts[0].APIKeys[0].Secret = "other"
	if persist.Fingerprint(secret) != base {
		t.Error("a secret changed the fingerprint")
	}
	// The same initial state written otherwise is the same fleet.
	same := simtest.Fleet()
	same.Accounts[0].Gateways[1].Devices[0].State = map[string]any{"dimming": "10"}
	if persist.Fingerprint(same) != base {
		t.Error("dimming 10 and \"10\" differ")
	}
	for name, edit := range map[string]func(f *fleet.Fleet){
		"name":   func(f *fleet.Fleet) { f.Accounts[0].Gateways[0].Devices[0].Name = "Other" },
		"state":  func(f *fleet.Fleet) { f.Accounts[0].Gateways[1].Devices[0].State = map[string]any{"dimming": 11} },
		"device": func(f *fleet.Fleet) { f.Accounts[0].Gateways[0].Devices = f.Accounts[0].Gateways[0].Devices[1:] },
		"mac":    func(f *fleet.Fleet) { f.Accounts[1].Gateways[0].MAC = "b0b0b0b0b0b2" },
	} {
		f := simtest.Fleet()
		edit(f)
		if persist.Fingerprint(f) == base {
			t.Errorf("another %s, the same fingerprint", name)
		}
	}
}
