package client

import (
	"sort"
	"strings"
	"time"
)

// Exchange is one request and its answer as the harness saw them; reports
// show it and turn it into a curl command.
type Exchange struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	// RequestHeaders and ResponseHeaders keep one value per header.
	RequestHeaders  map[string]string `json:"request_headers,omitempty"`
	RequestBody     string            `json:"request_body,omitempty"`
	Status          int               `json:"status,omitempty"`
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
	// ResponseBody is cut at the client's response limit (gwconform's
	// reports keep less of it); Truncated says it was cut.
	ResponseBody string        `json:"response_body,omitempty"`
	Truncated    bool          `json:"truncated,omitempty"`
	Duration     time.Duration `json:"duration_ns"`
	// Error is why no complete answer came (timeout, refused, reset...).
	Error string `json:"error,omitempty"`
	// Retries is how many times the request had been sent before this
	// exchange; RetriedAfter, when set, says this answer asked to retry
	// (429 or 503 with Retry-After) and the client did after that wait.
	Retries      int           `json:"retries,omitempty"`
	RetriedAfter time.Duration `json:"retried_after_ns,omitempty"`
	// Earlier are the attempts before this one, oldest first, each an
	// answer that asked to retry (Do fills it; reports list each attempt as
	// an exchange of its own, so this stays out of their files).
	Earlier []Exchange `json:"-"`
	// Repeated says the client's Ledger knew the request as sent and
	// accepted before, and sent it as it is (pinned, or repeated on
	// purpose): a refusal as a replay is the run's own doing.
	Repeated bool `json:"-"`
	// Tamper says what the request made wrong on purpose (nil: nothing in
	// its sign, timestamp or api_key).
	Tamper *Tamper `json:"tamper,omitempty"`
}

// Curl is a shell command that sends the same request again. A body whose
// sign was redacted (SignMarker) is piped through `gwconform sign`, which
// renews its timestamp and signs it afresh with the fleet's credentials
// ($GWCONFORM_FLEET, or the demo fleet), so the line works whenever it is
// pasted and no report ever carries a sign or a secret. What the check
// made wrong on purpose (Tamper: a changed sign digit, a stale timestamp,
// an unknown api_key) is kept wrong by the sign step's flags; a request
// no line can make afresh (its sign made with a secret the report does
// not hold) gets a line that says so and sends nothing.
//
// Where gwconform is not on the PATH, the line sends nothing and says in
// one line how to get it (NeedsGwconform), instead of letting curl send an
// empty body. The signed body goes through a temporary file, not a pipe:
// a sign step that fails stops the line there (curl is not run), and the
// body reaches curl byte for byte, a malformed one included.
func (e Exchange) Curl() string { return e.CurlSignedWith("") }

// CurlSignedWith is Curl for a run that read a fleet file named fleetName
// (its base name): the sign step reads $GWCONFORM_FLEET, and the line
// stops and names the file when the variable is not set, so that it never
// signs with the demo fleet's credentials by mistake nor hard-codes a path
// that is gone where the line is pasted. "" is Curl (the demo fleet).
func (e Exchange) CurlSignedWith(fleetName string) string {
	var b strings.Builder
	resign := strings.Contains(e.RequestBody, SignMarker) || strings.Contains(e.RequestBody, xmlEscape(SignMarker))
	if resign && e.Tamper != nil && e.Tamper.Unrepeatable != "" {
		return "echo " + shellQuote("no line can send this request afresh: "+e.Tamper.Unrepeatable+"; gwconform replay runs its check again") + " >&2; false"
	}
	if resign {
		b.WriteString("if ! command -v gwconform >/dev/null; then echo " + shellQuote(NeedsGwconform) + " >&2; false; ")
		if fleetName != "" {
			b.WriteString(`elif [ -z "${GWCONFORM_FLEET:-}" ]; then echo ` + shellQuote(NeedsFleet(fleetName)) + " >&2; false; ")
		}
		b.WriteString("else body=$(mktemp) && printf '%s' " + shellQuote(e.RequestBody) + ` | gwconform sign`)
		for _, a := range e.Tamper.Args() {
			b.WriteString(" " + shellQuote(a))
		}
		b.WriteString(` >"$body" && `)
	}
	b.WriteString("curl -sS -i")
	if e.Method != "" && e.Method != "GET" {
		b.WriteString(" -X " + e.Method)
	}
	keys := make([]string, 0, len(e.RequestHeaders))
	for k := range e.RequestHeaders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(" -H " + shellQuote(k+": "+e.RequestHeaders[k]))
	}
	switch {
	case resign:
		b.WriteString(` --data-binary @"$body"`)
	case e.RequestBody != "":
		b.WriteString(" --data-binary " + shellQuote(e.RequestBody))
	}
	b.WriteString(" " + shellQuote(e.URL))
	if resign {
		b.WriteString(`; s=$?; rm -f "$body"; [ "$s" = 0 ]; fi`)
	}
	return b.String()
}

// NeedsGwconform is what a curl line says where gwconform is not on the
// PATH.
const NeedsGwconform = "this line signs its request with gwconform, which is not on the PATH: " +
	"go install github.com/gwdmi/gwtools/cmd/gwconform@latest (or make build in a clone and add bin/ to the PATH); " +
	"set GWCONFORM_FLEET to your fleet file"

// NeedsFleet is what a line of a run that read the fleet file named name
// says where $GWCONFORM_FLEET is not set.
func NeedsFleet(name string) string {
	return "this line needs the fleet file the run read (" + name + "): set GWCONFORM_FLEET to its path and paste the line again"
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
