package batch

import (
	"testing"
)

// TestFarFollowsTheLastAnswers: the target is far once the median of its
// last answers, or of one device's, is batchFrom or more, and near again
// once they are fast; fewer than three answers tell nothing.
func TestFarFollowsTheLastAnswers(t *testing.T) {
	s := New(Config{})
	const dev = "0123456789abcdef0123456789abcd01"
	slow, fast := 2*batchFrom, batchFrom/10
	s.TimeAnswer(dev, slow)
	s.TimeAnswer(dev, slow)
	if s.Far() {
		t.Fatal("far after two answers")
	}
	s.TimeAnswer(dev, slow)
	if !s.Far() || !s.FarDevice(dev) {
		t.Fatal("not far after three slow answers about a device")
	}
	for range slowSamples {
		s.TimeAnswer("", fast) // the target's own answers turn fast, the device's stay
	}
	if !s.Far() {
		t.Error("near while a device's last answers are slow")
	}
	for range 3 {
		s.TimeAnswer(dev, fast)
	}
	if s.Far() || s.FarDevice(dev) {
		t.Error("far after the device's last answers were fast")
	}
	other := New(Config{})
	for range 3 {
		other.TimeAnswer("", slow) // answers that name no device
	}
	if !other.Far() || other.FarDevice(dev) {
		t.Error("the target's own slow answers: want far, and no device far")
	}
	other.TimeAnswer("", 0) // no time measured: not counted
	if !other.Far() {
		t.Error("an answer with no time changed the verdict")
	}
}
