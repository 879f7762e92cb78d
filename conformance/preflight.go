package conformance

import (
	"context"
	"fmt"
	"mime"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// PreflightRequests are one valid request per operation, about the fleet's
// devices, that leave them as the fleet file describes them: the command
// sends the state the fleet gives (the type's defaults where it gives
// none), the rename the fleet's own name.
func PreflightRequests(e *Env) []client.Request {
	d, ok := e.anyDevice()
	var out []client.Request
	if ok {
		c := e.base(device.SendCommand, d.SN, d.Type)
		t, _ := device.LookupType(d.Type)
		for _, f := range t.Fields {
			v := f.Default
			if s, ok := d.State[f.Name]; ok {
				v = normalize(map[string]any{"v": s})["v"]
			}
			c.set(f.Name, v)
		}
		out = append(out, c.request(device.JSON))
	}
	out = append(out, e.base(device.SendMessage, "", "").request(device.JSON))
	if ok && strings.TrimSpace(d.Name) != "" {
		c := e.base(device.UpdateName, d.SN, d.Type)
		c.set(device.FieldName, d.Name)
		out = append(out, c.request(device.JSON))
	}
	return out
}

// Preflight sends each request and returns an error, one line saying why,
// when an answer is not this interface's: not a JSON or XML body with a
// status field. A request that gets no answer at all is no reason to stop:
// the checks judge that one by one. A valid request that is refused is no
// reason either (wrong credentials show up in the checks, with the
// target's error).
func Preflight(ctx context.Context, c *client.Client, reqs []client.Request) error {
	for _, req := range reqs {
		r, _, err := c.Do(ctx, req)
		if err != nil || r == nil {
			continue
		}
		if r.StatusField == "" {
			mt, _, _ := mime.ParseMediaType(r.ContentType)
			if mt == "" {
				mt = "no Content-Type"
			}
			why := r.ParseError
			if why == "" {
				why = "no status field"
			}
			return fmt.Errorf("the target does not speak this interface: POST %s answered HTTP %d (%s: %s), not JSON or XML with a status; nothing checked (--skip-preflight runs the checks anyway)",
				req.Path, r.Status, mt, why)
		}
	}
	return nil
}
