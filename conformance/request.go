package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/trial"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// send sends a call in a format, records the exchange in the spec's report
// and fails the spec when no answer came. In a dry run it records the
// request and skips the spec instead.
func (env *Env) send(ctx context.Context, c catalog.Call, f device.Format) *client.Response {
	ginkgo.GinkgoHelper()
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
	if st, ok := env.replayStep(ctx, false); ok {
		// Sent with the other checks of its slow device.
		record(ctx, st.ex, env.ReportCredentials)
		return st.resp
	}
	resp, err := env.exchange(ctx, req)
	if err != nil {
		trial.From(ctx).Fail(err.Error())
	}
	return resp
}

// stopRun stops the run at the current check: the reason goes into the
// check's report as a StopEntry, which the report reads (the verdict is
// INCOMPLETE), and into the failure message, which people read.
func stopRun(ctx context.Context, reason string) {
	trial.From(ctx).Entry(report.StopEntry, reason, ginkgo.ReportEntryVisibilityNever)
	trial.From(ctx).Stop(reason + "; the run stops here, INCOMPLETE")
}

// exchange sends one request and records it in the spec's report. Once
// maxSilent requests in a row got no answer or a 5xx, or the run has sent
// --max-requests, it sends nothing more: the run stops there with verdict
// INCOMPLETE and the reason, so that a target that has stopped answering
// (or a shared staging that is failing) does not cost every remaining
// request its timeout, and is not blamed check by check for it.
func (env *Env) exchange(ctx context.Context, req client.Request) (*client.Response, error) {
	if n := env.silent.Load(); n >= maxSilent {
		stopRun(ctx, fmt.Sprintf("not sent: the target gave no answer or a 5xx to the last %d requests in a row", n))
	}
	if max := env.MaxRequests; max > 0 && env.sent.Add(1) > int64(max) {
		stopRun(ctx, fmt.Sprintf("not sent: the run reached --max-requests %d", max))
	}
	resp, ex, err := env.roundTrip(ctx, req)
	env.chain.Add(env.answerKey(req), 1+len(ex.Earlier), ex.Duration)
	record(ctx, ex, env.ReportCredentials)
	if err != nil {
		return nil, fmt.Errorf("no answer from the target: %v", err)
	}
	return resp, nil
}

// roundTrip sends one request and keeps the run's accounts of it (the
// answers in a row that did not come, the changes to wait for, each
// device's answer times), recording nothing in a check's report: the
// concurrent part of a slow device's checks (concurrent.go) uses it from
// other goroutines.
func (env *Env) roundTrip(ctx context.Context, req client.Request) (*client.Response, client.Exchange, error) {
	if n := env.silent.Load(); n >= maxSilent {
		// Requests sent ahead together stop too once the target has
		// stopped answering; the check that needs one stops the run.
		return nil, client.Exchange{}, fmt.Errorf("not sent: the target gave no answer or a 5xx to the last %d requests in a row", n)
	}
	release := env.slot()
	resp, ex, err := env.Client.Do(ctx, req)
	release()
	env.track(req, resp)
	if err == nil {
		// Only an answer tells how far the target is: a request that got
		// none (a timeout) says nothing of it.
		env.timeAnswer(req, ex)
	}
	if err != nil {
		env.silent.Add(1)
		return nil, ex, err
	}
	if resp.Status >= 500 && !refusesInput(resp.ErrorCode) {
		env.silent.Add(1)
	} else {
		env.silent.Store(0)
	}
	return resp, ex, nil
}

// refusesInput says whether an error code judges the request rather than
// the target's health: a target that answers such a code, whatever its
// status, is answering (wrongly, perhaps: the checks judge that), not
// failing.
func refusesInput(code string) bool {
	switch code {
	case device.CodeInvalidField, device.CodeMissingField, device.CodeUnexpectedField, device.CodeMalformedBody:
		return true
	}
	return false
}

// maxSilent is how many requests in a row may go unanswered (or answered
// 5xx) before the run stops: against a target that has stopped answering,
// a full run would otherwise take every check's timeout in turn.
const maxSilent = 20

// What the reports keep of each exchange's answer. The client reads up to
// its own limits (1 MiB of body, 256 KiB of headers) to judge an answer;
// keeping all of it would make a target that answers that much every time
// cost over a megabyte per exchange, held until the run ends (about 2,000
// exchanges) and then written into each of the three reports. The first
// kilobytes show what the target sent as well as all of it would.
const (
	maxRecordedBody    = 8 << 10
	maxRecordedHeaders = 8 << 10
)

// record adds an exchange to the spec's report, its sign redacted and,
// unless wholeKeys, its api_keys masked, its response body cut at
// maxRecordedBody (Truncated then says so) and its response headers at
// maxRecordedHeaders (a header named "…" then says how many were left out).
// Cut parts are copied: a slice would keep the whole answer alive.
func record(ctx context.Context, ex client.Exchange, wholeKeys bool) {
	for _, e := range ex.Earlier {
		record(ctx, e, wholeKeys)
	}
	ex.Earlier = nil
	ex = ex.Redacted()
	if len(ex.ResponseBody) > maxRecordedBody {
		ex.ResponseBody, ex.Truncated = strings.Clone(ex.ResponseBody[:maxRecordedBody]), true
	}
	if !wholeKeys {
		ex = ex.Masked()
	}
	size := 0
	for k, v := range ex.ResponseHeaders {
		size += len(k) + len(v)
	}
	if size > maxRecordedHeaders {
		keys := make([]string, 0, len(ex.ResponseHeaders))
		for k := range ex.ResponseHeaders {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		kept, budget := make(map[string]string), maxRecordedHeaders
		for _, k := range keys {
			v := ex.ResponseHeaders[k]
			if len(k)+len(v) > budget {
				continue
			}
			budget -= len(k) + len(v)
			kept[k] = strings.Clone(v)
		}
		kept["…"] = fmt.Sprintf("%d of %d headers (%d bytes in all) not kept in the report", len(keys)-len(kept), len(keys), size)
		ex.ResponseHeaders = kept
	}
	trial.From(ctx).Entry("exchange", ex, ginkgo.ReportEntryVisibilityNever)
}

// accepted is the MUST-level verdict: a 2xx answer whose status is success.
func accepted(r *client.Response) bool {
	return r != nil && r.Status/100 == 2 && r.StatusField == "success"
}

// describe says in one line what the target answered.
func describe(r *client.Response) string {
	if r == nil {
		return "no answer"
	}
	s := fmt.Sprintf("HTTP %d", r.Status)
	if r.StatusField != "" {
		s += ", status " + r.StatusField
	}
	if r.ErrorCode != "" {
		s += ", error " + r.ErrorCode
		if r.ErrorField != "" {
			s += " (" + r.ErrorField + ")"
		}
	}
	if r.ParseError != "" {
		s += ", body unreadable: " + r.ParseError
	}
	return s
}
