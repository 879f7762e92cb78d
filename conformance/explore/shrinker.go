package explore

import (
	"time"
)

// Shrinker makes a failing sequence small: a delta-debugging shrinker
// (ddmin over operations, then fewer devices, then simpler values). It
// runs outside go test, which rapid's state machines cannot (they need a
// *testing.T); docs/explore.md says more.
type Shrinker struct {
	Rules Rules
	World *World
	// Budget bounds the time; the smallest failing sequence found by then
	// is returned.
	Budget time.Duration
	// Fails runs a candidate and reports whether it still disagrees.
	Fails func([]Op) bool
	// Runs counts the candidates run.
	Runs     int
	deadline time.Time
}

func (s *Shrinker) fails(ops []Op) bool {
	s.Runs++
	return s.Fails(ops)
}

func (s *Shrinker) late() bool { return !s.deadline.IsZero() && time.Now().After(s.deadline) }

// Shrink returns a smallest sequence found that still fails; ops must
// fail and end at the operation that disagrees.
func (s *Shrinker) Shrink(ops []Op) []Op {
	if s.Budget > 0 {
		s.deadline = time.Now().Add(s.Budget)
	}
	ops = s.quick(ops)
	ops = s.ddmin(ops)
	ops = s.anyChunk(ops)
	ops = s.fewerDevices(ops)
	ops = s.simpler(ops)
	ops = s.ddmin(ops)
	return s.anyChunk(ops)
}

// anyChunkMax is the longest sequence anyChunk works on: it runs up to
// n²/4 candidates.
const anyChunkMax = 40

// anyChunk tries removing every run of consecutive operations of every
// length, for short sequences that ddmin's halving cannot cut further:
// a bug that counts (every fifth command) fails only when a multiple of
// five commands goes at once.
func (s *Shrinker) anyChunk(ops []Op) []Op {
	if len(ops) > anyChunkMax {
		return ops
	}
	for size := len(ops) / 2; size >= 2; size-- {
		for start := 0; start+size <= len(ops) && !s.late(); start++ {
			c := append(append([]Op(nil), ops[:start]...), ops[start+size:]...)
			if len(c) > 0 && s.fails(c) {
				ops = c
				size = min(size+1, len(ops)/2+1) // try this length again on what is left
				break
			}
		}
	}
	return ops
}

// quick tries a few big cuts at the price of one run each, before ddmin
// works through what is left: only the operations on the failing
// operation's device (or gateway's log), no refused operations, no reads
// but the last operation.
func (s *Shrinker) quick(ops []Op) []Op {
	last := ops[len(ops)-1]
	m := NewModel(s.World, s.Rules)
	cuts := []func(i int, op Op) bool{
		func(i int, op Op) bool { // the same device, or the same log
			if last.Kind == Message || last.Kind == ReadMessages {
				return (op.Kind == Message || op.Kind == ReadMessages) && op.MAC == last.MAC
			}
			return op.Kind != Message && op.Kind != ReadMessages && op.device() == last.device()
		},
		func(i int, op Op) bool { return op.IsRead() || m.Judge(op).Expect.Status == 200 || i == len(ops)-1 },
		func(i int, op Op) bool { return !op.IsRead() || i == len(ops)-1 },
	}
	for _, keep := range cuts {
		if s.late() {
			break
		}
		var c []Op
		for i, op := range ops {
			if keep(i, op) {
				c = append(c, op)
			}
		}
		if len(c) < len(ops) && len(c) > 0 && s.fails(c) {
			ops = c
		}
	}
	return ops
}

// ddmin removes chunks of operations, halving their size, while the rest
// still fails; it ends with no single operation removable (1-minimal)
// unless the budget runs out first.
func (s *Shrinker) ddmin(ops []Op) []Op {
	for size := len(ops) / 2; size >= 1; {
		removed := false
		// From the end: late operations rarely set up a failure.
		for end := len(ops); end > 0 && !s.late(); {
			start := max(0, end-size)
			c := append(append([]Op(nil), ops[:start]...), ops[end:]...)
			if len(c) > 0 && s.fails(c) {
				ops, removed = c, true
				end = start
				if end > len(ops) {
					end = len(ops)
				}
				continue
			}
			end = start
		}
		if s.late() {
			break
		}
		if !removed || size > len(ops)/2 {
			size /= 2
		}
		if size > len(ops)/2 && len(ops) > 1 {
			size = len(ops) / 2
		}
	}
	return ops
}

// fewerDevices moves every operation on one device to another device of
// the same type already in the sequence, while the result still fails.
func (s *Shrinker) fewerDevices(ops []Op) []Op {
	devs := []devKey{}
	seen := map[devKey]bool{}
	for _, op := range ops {
		k := op.device()
		if _, ok := s.World.devs[k]; ok && op.SN != "" && !seen[k] {
			seen[k] = true
			devs = append(devs, k)
		}
	}
	for i, from := range devs {
		for _, to := range devs[:i] {
			if s.late() || s.World.devs[from] != s.World.devs[to] || !seen[to] {
				continue
			}
			c := make([]Op, len(ops))
			for j, op := range ops {
				if op.SN == from.SN && op.MAC == from.MAC {
					op.MAC, op.SN = to.MAC, to.SN
					op.Account = s.World.gwOf[to.MAC]
					for _, a := range s.World.Accounts {
						if a.ID == op.Account && op.Key != "" {
							op.Key = a.Key
						}
					}
				}
				c[j] = op
			}
			if s.fails(c) {
				ops, seen[from] = c, false
				break
			}
		}
	}
	return ops
}

// simpler tries, operation by operation, JSON instead of XML and the
// plainest value of each valid field.
func (s *Shrinker) simpler(ops []Op) []Op {
	try := func(i int, op Op) {
		if s.late() {
			return
		}
		c := append([]Op(nil), ops...)
		c[i] = op
		if s.fails(c) {
			ops = c
		}
	}
	for i := range ops {
		op := ops[i]
		if op.Format == "xml" {
			o := op
			o.Format = "json"
			try(i, o)
		}
		if ops[i].Note != "valid" {
			continue
		}
		for j, kv := range ops[i].Fields {
			o := ops[i]
			o.Fields = append([]KV(nil), o.Fields...)
			switch {
			case o.Kind == Command:
				o.Fields[j] = s.Rules.Simplest(o.Type, kv.Key)
			case kv.Key == "name":
				o.Fields[j].Value = "x"
			case kv.Key == "message_type":
				o.Fields[j].Value = "message"
			case kv.Key == "message_value":
				o.Fields[j].Value = "a=1"
			}
			if o.Fields[j] != kv {
				try(i, o)
			}
		}
	}
	return ops
}

// fewerClients moves every operation of one client to another, while the
// result still fails: a race needs two clients, rarely more.
func (s *Shrinker) fewerClients(ops []Op) []Op {
	var clients []int
	seen := map[int]bool{}
	for _, op := range ops {
		if !seen[op.Client] {
			seen[op.Client] = true
			clients = append(clients, op.Client)
		}
	}
	for i := len(clients) - 1; i > 0; i-- {
		for _, to := range clients[:i] {
			if s.late() || !seen[to] {
				continue
			}
			c := make([]Op, len(ops))
			for j, op := range ops {
				if op.Client == clients[i] {
					op.Client = to
				}
				c[j] = op
			}
			if s.fails(c) {
				ops, seen[clients[i]] = c, false
				break
			}
		}
	}
	return ops
}

// ShrinkConcurrent is Shrink for concurrent clients' operations: ddmin,
// then any run of operations, then fewer clients, then ddmin again; the
// values are left as they are (a race depends on timing more than on
// values).
func (s *Shrinker) ShrinkConcurrent(ops []Op) []Op {
	if s.Budget > 0 {
		s.deadline = time.Now().Add(s.Budget)
	}
	ops = s.ddmin(ops)
	ops = s.anyChunk(ops)
	ops = s.fewerClients(ops)
	ops = s.ddmin(ops)
	return s.anyChunk(ops)
}
