package persist

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/store"
)

type savedDevice struct {
	account, mac, sn string
	t                *device.Type
	settings         []device.Setting
	name             string
}

type savedLog struct {
	account, mac string
	msgs         []store.Message
	total        uint64
}

// load checks the file read-only, reads every record, and only then puts
// them into the store: a file refused is never written to.
func load(path string, st *store.Store, fp string) error {
	db, err := openDB(path, true)
	if err != nil {
		return err
	}
	defer db.Close()
	var devices []savedDevice
	var logs []savedLog
	err = view(db, func(tx *bolt.Tx) error {
		if err := checkMeta(tx, path, fp); err != nil {
			return err
		}
		if err := tx.Bucket(bucketDevices).ForEach(func(k, v []byte) error {
			d, err := decodeDevice(k, v)
			if err != nil {
				return fmt.Errorf("device %q: %v", k, err)
			}
			devices = append(devices, d)
			return nil
		}); err != nil {
			return err
		}
		limit := st.MessageLimit()
		return tx.Bucket(bucketMessages).ForEachBucket(func(k []byte) error {
			l, err := decodeLog(k, tx.Bucket(bucketMessages).Bucket(k), limit)
			if err != nil {
				return fmt.Errorf("messages of %q: %v", k, err)
			}
			logs = append(logs, l)
			return nil
		})
	})
	if err != nil {
		if _, ok := err.(*refusal); ok {
			return err
		}
		return refuse(ErrDamaged, path, "is damaged (%v)", err)
	}
	for _, d := range devices {
		if derr := st.Command(d.account, d.mac, d.sn, d.t, d.settings); derr != nil {
			return refuse(ErrDamaged, path, "is damaged: it holds device %s/%s/%s, which this fleet does not have as a %s (%v)",
				d.account, d.mac, d.sn, d.t.Name, derr.Message)
		}
		st.Rename(d.account, d.mac, d.sn, d.name)
	}
	for _, l := range logs {
		if derr := st.RestoreMessages(l.account, l.mac, l.msgs, l.total); derr != nil {
			return refuse(ErrDamaged, path, "is damaged: it holds messages of gateway %s/%s, which this fleet does not have", l.account, l.mac)
		}
	}
	return nil
}

// view is db.View that turns a panic on a damaged page into an error.
func view(db *bolt.DB, fn func(*bolt.Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	return db.View(fn)
}

func decodeDevice(k, v []byte) (savedDevice, error) {
	parts := strings.Split(string(k), "/")
	if len(parts) != 3 || len(parts[0]) != 24 || len(parts[1]) != 12 || len(parts[2]) != 32 {
		return savedDevice{}, fmt.Errorf("the key is not myservice_id/mac/sn")
	}
	var rec deviceRecord
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return savedDevice{}, err
	}
	t, ok := device.LookupType(rec.Type)
	if !ok {
		return savedDevice{}, fmt.Errorf("no device type %q", rec.Type)
	}
	if rec.Name != "" {
		if err := device.CheckName(rec.Name); err != nil {
			return savedDevice{}, err
		}
	}
	if len(rec.State) != len(t.Fields) {
		return savedDevice{}, fmt.Errorf("the state of %s has %d fields, not %d", device.A(t.Name), len(rec.State), len(t.Fields))
	}
	d := savedDevice{account: parts[0], mac: parts[1], sn: parts[2], t: t, name: rec.Name}
	for i := range t.Fields {
		f := &t.Fields[i]
		text, ok := rec.State[f.Name]
		if !ok {
			return savedDevice{}, fmt.Errorf("the state lacks %s", f.Name)
		}
		s, derr := f.Parse(i, device.Str(text))
		if derr != nil {
			return savedDevice{}, derr
		}
		d.settings = append(d.settings, s)
	}
	return d, nil
}

func decodeLog(k []byte, b *bolt.Bucket, limit int) (savedLog, error) {
	parts := strings.Split(string(k), "/")
	if len(parts) != 2 || len(parts[0]) != 24 || len(parts[1]) != 12 {
		return savedLog{}, fmt.Errorf("the key is not myservice_id/mac")
	}
	l := savedLog{account: parts[0], mac: parts[1]}
	c := b.Cursor()
	last, _ := c.Last()
	if last == nil {
		return l, nil
	}
	if len(last) != 8 {
		return savedLog{}, fmt.Errorf("a key is not a message number")
	}
	l.total = binary.BigEndian.Uint64(last)
	// The newest limit, read backwards.
	for k, v := c.Last(); k != nil && len(l.msgs) < limit; k, v = c.Prev() {
		if len(k) != 8 {
			return savedLog{}, fmt.Errorf("a key is not a message number")
		}
		var m store.Message
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return savedLog{}, fmt.Errorf("message %d: %v", binary.BigEndian.Uint64(k), err)
		}
		if m.Type == "" || !utf8.ValidString(m.Type) || !utf8.ValidString(m.Value) {
			return savedLog{}, fmt.Errorf("message %d is not a message", binary.BigEndian.Uint64(k))
		}
		l.msgs = append(l.msgs, m)
	}
	slices.Reverse(l.msgs)
	return l, nil
}
