package engine

import (
	"context"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/internal/batch"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// send sends a call in a format, records the exchange in the spec's report
// and fails the spec when no answer came. In a dry run it records the
// request and skips the spec instead.
func (env *Env) Send(ctx context.Context, c catalog.Call, f device.Format) *client.Response {
	trial.Helper()
	req := c.Request(f)
	if env.DryRun {
		body := req.RawBody
		if body == nil {
			body, _ = client.Encode(f, req.Fields)
		}
		method := req.Method
		if method == "" {
			method = "POST"
		}
		ct := req.ContentType
		if ct == "" {
			ct = map[device.Format]string{device.JSON: "application/json", device.XML: "application/xml"}[f]
		}
		ex := client.Exchange{Method: method, URL: env.Client.URL(req.Path), RequestBody: string(body),
			RequestHeaders: map[string]string{"Content-Type": strings.ReplaceAll(ct, client.NoContentType, "")}}
		ex = ex.Redacted()
		if !env.ReportCredentials {
			ex = ex.Masked()
		}
		trial.From(ctx).Entry("exchange", ex, ginkgo.ReportEntryVisibilityNever)
		trial.From(ctx).Skip("dry run: not sent")
	}
	if st, ok := batch.Replay(ctx, false); ok {
		// Sent with the other checks of its device.
		env.Link().Record(ctx, st.Ex)
		return st.Resp
	}
	resp, err := env.Link().Exchange(ctx, req)
	if err != nil {
		trial.From(ctx).Fail(err.Error())
	}
	return resp
}
