package link

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/gatewayapi/client"
)

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

// Record adds an exchange to the running check's report.
func (l *Link) Record(ctx context.Context, ex client.Exchange) { Record(ctx, ex, l.cfg.WholeKeys) }

// Record adds an exchange to the running check's report, its sign
// redacted and, unless wholeKeys, its api_keys masked, its response body
// cut at maxRecordedBody (Truncated then says so) and its response headers
// at maxRecordedHeaders (a header named "…" then says how many were left
// out). Cut parts are copied: a slice would keep the whole answer alive.
func Record(ctx context.Context, ex client.Exchange, wholeKeys bool) {
	for _, e := range ex.Earlier {
		Record(ctx, e, wholeKeys)
	}
	ex.Earlier = nil
	ex = ex.Redacted()
	if len(ex.ResponseBody) > maxRecordedBody {
		ex.ResponseBody, ex.Truncated = strings.Clone(ex.ResponseBody[:maxRecordedBody]), true
	}
	if !wholeKeys {
		ex = ex.Masked()
	}
	ex.ResponseHeaders = keptHeaders(ex.ResponseHeaders)
	trial.From(ctx).Entry("exchange", ex, ginkgo.ReportEntryVisibilityNever)
}

// keptHeaders are the response headers a report keeps: all of them up to
// maxRecordedHeaders, else those that fit in name order and a header named
// "…" saying what was left out.
func keptHeaders(h map[string]string) map[string]string {
	size := 0
	for k, v := range h {
		size += len(k) + len(v)
	}
	if size <= maxRecordedHeaders {
		return h
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kept, budget := make(map[string]string), maxRecordedHeaders
	for _, k := range keys {
		v := h[k]
		if len(k)+len(v) > budget {
			continue
		}
		budget -= len(k) + len(v)
		kept[k] = strings.Clone(v)
	}
	kept["…"] = fmt.Sprintf("%d of %d headers (%d bytes in all) not kept in the report", len(keys)-len(kept), len(keys), size)
	return kept
}
