package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Updates of concurrent requests go to Redis in shared pipelines; each
// still gets its own answer, and they land in each device's order: every
// device ends with its own last name.
func TestBatchedUpdatesEachGetTheirAnswer(t *testing.T) {
	r := simtest.StartRedis(t, false)
	f := fleet.Generate(3, 2, 20)
	s, err := redisstore.Open(context.Background(), f, redisstore.Options{URL: r.URL(), Reset: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := f.Accounts[0]
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for _, g := range a.Gateways {
		for i, d := range g.Devices {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 20; k++ {
					if derr := s.Rename(a.ID, g.MAC, d.SN, fmt.Sprintf("d%d-%d", i, k)); derr != nil {
						errs <- fmt.Errorf("%s rename %d: %v", d.SN, k, derr)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, g := range a.Gateways {
		for i, d := range g.Devices {
			v, ok, derr := s.Device(g.MAC, d.SN)
			if !ok || derr != nil || v.Name != fmt.Sprintf("d%d-19", i) {
				t.Errorf("%s: name %q (%v %v), want its last rename d%d-19", d.SN, v.Name, ok, derr, i)
			}
		}
	}
}

// Closing the store while updates wait answers them with an error; none
// hangs.
func TestBatchedUpdatesAfterClose(t *testing.T) {
	r := simtest.StartRedis(t, false)
	f := fleet.Generate(4, 1, 10)
	s, err := redisstore.Open(context.Background(), f, redisstore.Options{URL: r.URL(), Reset: true})
	if err != nil {
		t.Fatal(err)
	}
	a, g := f.Accounts[0], f.Accounts[0].Gateways[0]
	var wg sync.WaitGroup
	for _, d := range g.Devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				if s.Rename(a.ID, g.MAC, d.SN, fmt.Sprint(k)) != nil {
					return
				}
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	s.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("updates still waiting 10 s after Close")
	}
	if derr := s.Rename(a.ID, g.MAC, g.Devices[0].SN, "late"); derr == nil || derr.Code != device.CodeStorageUnavailable {
		t.Errorf("a rename after Close: %v, want storage_unavailable", derr)
	}
}
