package link

import (
	"context"

	"github.com/gwdmi/gwtools/conformance/observer"
)

// Observed says whether the run reads an observer at all.
func (l *Link) Observed() bool { return l.cfg.Observer.Base != "" }

// ReadDevice reads a device from the observer once the changes accepted
// for it have appeared, or Settle has passed (settle.go).
func (l *Link) ReadDevice(ctx context.Context, mac, sn string) (observer.Device, error) {
	return l.awaitDevice(ctx, mac, sn)
}

// ReadDeviceNow reads a device from the observer as it is.
func (l *Link) ReadDeviceNow(ctx context.Context, mac, sn string) (observer.Device, error) {
	return l.readDevice(ctx, mac, sn)
}

// ReadLog reads a gateway's messages from the observer once the newest
// accepted message has appeared, or Settle has passed (settle.go).
func (l *Link) ReadLog(ctx context.Context, mac string) (observer.Log, error) {
	return l.awaitLog(ctx, mac)
}

// ReadLogNow reads a gateway's messages from the observer as they are.
func (l *Link) ReadLogNow(ctx context.Context, mac string) (observer.Log, error) {
	return l.readLog(ctx, mac)
}
