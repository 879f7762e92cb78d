package simulator_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The hostile-input catalog: requests an attacker, a broken client or a
// fuzzing proxy might send, each through real HTTP (or raw TCP where the
// request cannot be written with net/http's client). Every one must get a
// 4xx with a clear error (our JSON or XML error; for requests net/http
// itself refuses before our handler, its own plain-text 4xx), or, for
// clients too slow to finish a request, the connection cut off cleanly;
// the server stays healthy and nothing in the state changes.
//
// The server runs with short timeouts (ReadHeaderTimeout 1s, ReadTimeout
// 2s) so that the slow-client cases take seconds, not minutes.

const (
	hostileHeaderTimeout = time.Second
	hostileReadTimeout   = 2 * time.Second
)

// hostileEnv is the server under attack.
type hostileEnv struct {
	addr string
	c    *simtest.Client
}

// answer is one response read back.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) String() string {
	return fmt.Sprintf("%d %s %.300q", a.status, a.header.Get("Content-Type"), a.body)
}

// hostile is one entry of the catalog.
type hostile struct {
	category, name string
	// send sends the request and returns the answers read (several for a
	// pipeline; none when the server cut the connection without one).
	send func(t *testing.T, h *hostileEnv) []answer
	// status is the status every answer must have (0: any 4xx); code the
	// error code of our answer ("": any).
	status int
	code   string
	// goOwn: net/http answers before our handler (plain text is fine).
	goOwn bool
	// cutOff: the server must close the connection without an answer.
	cutOff bool
	// answers is how many answers a pipeline must get (0: one).
	answers int
}

func startHostile(t *testing.T) *hostileEnv {
	t.Helper()
	sim := simtest.Start(t, simulator.Options{ReadHeaderTimeout: hostileHeaderTimeout, ReadTimeout: hostileReadTimeout,
		ShutdownTimeout: time.Second, AllowedHosts: []string{"gwsim"}}) // the catalog's raw requests say Host: gwsim
	c := sim.Client
	c.HTTP = &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &hostileEnv{addr: strings.TrimPrefix(sim.Base, "http://"), c: c}
}

// do sends a request with the net/http client.
func (h *hostileEnv) do(t *testing.T, method, path string, header http.Header, body []byte) []answer {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+h.addr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := h.c.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return []answer{{status: res.StatusCode, header: res.Header, body: b}}
}

// raw writes bytes over TCP and reads up to n answers; the writing runs
// beside the reading, so a server that answers early is read.
func (h *hostileEnv) raw(t *testing.T, data []byte, n int) []answer {
	t.Helper()
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	go conn.Write(data)
	return readAnswers(conn, n)
}

func readAnswers(conn net.Conn, n int) []answer {
	br := bufio.NewReader(conn)
	var out []answer
	for len(out) < n {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		out = append(out, answer{status: res.StatusCode, header: res.Header, body: b})
	}
	return out
}

// stream writes head and then body bytes as fast as the server takes them
// (up to limit) while reading the answer; it returns the answer and how
// much was written before the server hung up. The server must answer and
// hang up by itself: the test does not close the connection first.
func (h *hostileEnv) stream(t *testing.T, head []byte, chunk []byte, limit int64) ([]answer, int64) {
	t.Helper()
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := conn.Write(head)
		total := int64(n)
		for err == nil && total < limit {
			n, err = conn.Write(chunk)
			total += int64(n)
		}
		done <- result{total, err}
	}()
	answers := readAnswers(conn, 1)
	select {
	case r := <-done:
		if r.err == nil {
			t.Errorf("the server took all %d bytes of the body without hanging up", r.n)
		}
		t.Logf("%d bytes written before the server hung up", r.n)
		return answers, r.n
	case <-time.After(8 * time.Second):
		t.Errorf("the server neither answered and hung up nor stopped reading within 8s")
		return answers, -1
	}
}

// slow writes data one byte every interval and reports the answers and
// how long until the server closed the connection.
func (h *hostileEnv) slow(t *testing.T, data []byte, interval time.Duration) ([]answer, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	began := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := range data {
			if _, err := conn.Write(data[i : i+1]); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	answers := readAnswers(conn, 1)
	// The server has answered or hung up; wait for the hang-up.
	io.Copy(io.Discard, conn)
	return answers, time.Since(began)
}

// Request bodies. Each is signed and valid but for its one hostile part.

func (h *hostileEnv) dimJSON(value string) []byte {
	return simtest.Body(device.JSON, h.c.Command(snOf(dimmer), dimmer, N("dimming", value)))
}

func (h *hostileEnv) dimXML(inner string) []byte {
	return simtest.Body(device.XML, h.c.Command(snOf(dimmer), dimmer, N("dimming", inner)))
}

// controlJSON is the members of a valid dimmer command's control object,
// without the braces.
func (h *hostileEnv) controlJSON() string {
	s := string(h.dimJSON(`"42"`))
	return strings.TrimSuffix(strings.TrimPrefix(s, `{"control":{`), "}}")
}

// controlXML is the fields of a valid dimmer command, without control.
func (h *hostileEnv) controlXML() string {
	s := string(h.dimXML("42"))
	return s[strings.Index(s, "<control>")+len("<control>") : strings.Index(s, "</control>")]
}

var (
	hJSON = http.Header{"Content-Type": {"application/json"}}
	hXML  = http.Header{"Content-Type": {"application/xml"}}
)

// post sends a body to send command with a Content-Type.
func post(h http.Header, body func(h *hostileEnv) []byte) func(*testing.T, *hostileEnv) []answer {
	return postTo(device.SendCommand.Path(), h, body)
}

func postTo(path string, hd http.Header, body func(h *hostileEnv) []byte) func(*testing.T, *hostileEnv) []answer {
	return func(t *testing.T, h *hostileEnv) []answer { return h.do(t, http.MethodPost, path, hd, body(h)) }
}

func rawSend(n int, data func(h *hostileEnv) string) func(*testing.T, *hostileEnv) []answer {
	return func(t *testing.T, h *hostileEnv) []answer { return h.raw(t, []byte(data(h)), n) }
}

// request writes one HTTP/1.1 request; headers are full lines without
// CRLF. Content-Length is not added: the headers say what they say.
func request(method, path string, body string, headers ...string) string {
	var b strings.Builder
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: gwsim\r\n")
	for _, hd := range headers {
		b.WriteString(hd + "\r\n")
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

func cl(body string) string { return "Content-Length: " + strconv.Itoa(len(body)) }

func chunked(body string) string {
	return fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
}

func hostileCatalog() []hostile {
	const cmdPath = "/v1/services/gateway/command"
	malformed, invalid := device.CodeMalformedBody, device.CodeInvalidField
	deepJSON := strings.Repeat("[", 20000)
	deepObj := strings.Repeat(`{"a":`, 10000)
	deepXML := strings.Repeat("<a>", 10000)
	var cs []hostile
	add := func(category, name string, status int, code string, send func(*testing.T, *hostileEnv) []answer) {
		cs = append(cs, hostile{category: category, name: name, status: status, code: code, send: send})
	}
	goOwn := func(category, name string, status int, send func(*testing.T, *hostileEnv) []answer) {
		cs = append(cs, hostile{category: category, name: name, status: status, goOwn: true, send: send})
	}
	xmlWith := func(doctype, value string) func(h *hostileEnv) []byte {
		return func(h *hostileEnv) []byte {
			return []byte(`<?xml version="1.0" encoding="UTF-8"?>` + doctype + "<xml><control>" +
				strings.Replace(h.controlXML(), ">42<", ">"+value+"<", 1) + "</control></xml>")
		}
	}
	jsonWith := func(fn func(control string) string) func(h *hostileEnv) []byte {
		return func(h *hostileEnv) []byte { return []byte(fn(h.controlJSON())) }
	}
	dimJ := func(v string) func(h *hostileEnv) []byte { return func(h *hostileEnv) []byte { return h.dimJSON(v) } }
	dimX := func(v string) func(h *hostileEnv) []byte { return func(h *hostileEnv) []byte { return h.dimXML(v) } }
	thermoJ := func(v string) func(h *hostileEnv) []byte {
		return func(h *hostileEnv) []byte {
			return simtest.Body(device.JSON, h.c.Command(snOf(thermostat), thermostat, N("cooling point", v)))
		}
	}
	renameJ := func(name string) func(h *hostileEnv) []byte {
		return func(h *hostileEnv) []byte {
			return simtest.Body(device.JSON, append(h.c.Envelope(), S("sn", snOf(dimmer)), N("name", name)))
		}
	}
	lit := func(s string) func(*hostileEnv) []byte { return func(*hostileEnv) []byte { return []byte(s) } }

	// XML declarations and entities: refused before any is read.
	const xxe = `<!DOCTYPE xml [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>`
	add("xml-entities", "DOCTYPE with an internal subset", 400, malformed, post(hXML, xmlWith(`<!DOCTYPE xml [<!ELEMENT xml ANY>]>`, "42")))
	add("xml-entities", "external entity file:///etc/passwd", 400, malformed, post(hXML, xmlWith(xxe, "&xxe;")))
	add("xml-entities", "external parameter entity", 400, malformed,
		post(hXML, xmlWith(`<!DOCTYPE xml [<!ENTITY % p SYSTEM "http://127.0.0.1:1/evil.dtd"> %p;]>`, "42")))
	add("xml-entities", "billion laughs", 400, malformed, post(hXML, xmlWith(billionLaughs(), "&lol9;")))
	add("xml-entities", "DOCTYPE with a public external DTD", 400, malformed,
		post(hXML, xmlWith(`<!DOCTYPE xml PUBLIC "-//X//Y" "http://127.0.0.1:1/x.dtd">`, "42")))
	add("xml-entities", "undeclared entity", 400, malformed, post(hXML, xmlWith("", "&xxe;")))
	add("xml-entities", "XInclude of /etc/passwd", 400, invalid,
		post(hXML, xmlWith("", `<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="file:///etc/passwd" parse="text"/>`)))
	add("xml-entities", "declaration in another encoding", 400, malformed, post(hXML, func(h *hostileEnv) []byte {
		return bytes.Replace(h.dimXML("42"), []byte("UTF-8"), []byte("UTF-7"), 1)
	}))

	// Nesting thousands deep: refused at the first level too many.
	add("nesting", "JSON 20000 arrays at the top", 400, malformed, post(hJSON, lit(deepJSON)))
	add("nesting", "JSON 10000 objects at the top", 400, device.CodeUnexpectedField, post(hJSON, lit(deepObj)))
	add("nesting", "JSON 20000 arrays as control", 400, malformed, post(hJSON, lit(`{"control":`+deepJSON)))
	add("nesting", "JSON 20000 arrays inside a field", 400, invalid, post(hJSON, dimJ(deepJSON)))
	add("nesting", "JSON 10000 objects inside a field", 400, invalid, post(hJSON, dimJ(deepObj)))
	add("nesting", "XML 10000 elements at the top", 400, malformed, post(hXML, lit(deepXML)))
	add("nesting", "XML 10000 elements inside xml", 400, device.CodeUnexpectedField, post(hXML, lit("<xml>"+deepXML)))
	add("nesting", "XML 10000 elements inside a field", 400, invalid, post(hXML, dimX(deepXML)))
	add("nesting", "XML control inside control", 400, invalid, post(hXML, lit("<xml><control>"+strings.Repeat("<control>", 5000))))

	// Sizes and streams: 413 after 64 KiB, whatever the client does next.
	cs = append(cs,
		hostile{category: "size", name: "10 MB JSON body", status: 413, code: device.CodeBodyTooLarge,
			send: func(t *testing.T, h *hostileEnv) []answer {
				body := string(h.dimJSON(`"42"`))
				head := request("POST", cmdPath, "", "Content-Type: application/json", "Content-Length: "+strconv.Itoa(10<<20))
				a, _ := h.stream(t, []byte(head+body[:len(body)-1]), bytes.Repeat([]byte(" "), 64<<10), 10<<20)
				return a
			}},
		hostile{category: "size", name: "10 MB XML body", status: 413, code: device.CodeBodyTooLarge,
			send: func(t *testing.T, h *hostileEnv) []answer {
				head := request("POST", cmdPath, "", "Content-Type: application/xml", "Content-Length: "+strconv.Itoa(10<<20))
				a, _ := h.stream(t, []byte(head+"<xml><control><name>"), bytes.Repeat([]byte("x"), 64<<10), 10<<20)
				return a
			}},
		hostile{category: "size", name: "a chunked body that never ends", status: 413, code: device.CodeBodyTooLarge,
			send: func(t *testing.T, h *hostileEnv) []answer {
				head := request("POST", cmdPath, "", "Content-Type: application/json", "Transfer-Encoding: chunked")
				chunk := fmt.Sprintf("%x\r\n%s\r\n", 16<<10, strings.Repeat(" ", 16<<10))
				a, n := h.stream(t, []byte(head+"1\r\n{\r\n"), []byte(chunk), 1<<30)
				if n > 32<<20 { // socket buffers hold a few MB
					t.Errorf("the server read %d bytes of a body limited to 64 KiB before hanging up", n)
				}
				return a
			}},
	)
	add("size", "Content-Length of a petabyte", 413, device.CodeBodyTooLarge, rawSend(1, func(h *hostileEnv) string {
		return request("POST", cmdPath, string(h.dimJSON(`"42"`)), "Content-Type: application/json", "Content-Length: 1000000000000000")
	}))
	add("size", "64 KiB of one-byte chunks", 413, device.CodeBodyTooLarge, rawSend(1, func(h *hostileEnv) string {
		return request("POST", cmdPath, strings.Repeat("1\r\n \r\n", 64<<10+1)+"0\r\n\r\n",
			"Content-Type: application/json", "Transfer-Encoding: chunked")
	}))
	add("size", "a bad chunk size", 400, malformed, rawSend(1, func(h *hostileEnv) string {
		return request("POST", cmdPath, "zz\r\n{}\r\n0\r\n\r\n", "Content-Type: application/json", "Transfer-Encoding: chunked")
	}))
	add("size", "a name of a million characters (JSON)", 413, device.CodeBodyTooLarge, post(hJSON, renameJ(`"`+strings.Repeat("n", 1<<20)+`"`)))
	add("size", "a name of a million characters (XML)", 413, device.CodeBodyTooLarge, postTo(device.UpdateName.Path(), hXML,
		func(h *hostileEnv) []byte {
			return simtest.Body(device.XML, append(h.c.Envelope(), S("sn", snOf(dimmer)), S("name", strings.Repeat("n", 1<<20))))
		}))
	add("size", "a name of 60000 characters", 400, invalid, postTo(device.UpdateName.Path(), hJSON, renameJ(`"`+strings.Repeat("n", 60000)+`"`)))
	add("size", "a field name of 60000 characters", 400, device.CodeUnexpectedField,
		post(hJSON, jsonWith(func(c string) string { return `{"control":{` + c + `,"` + strings.Repeat("k", 60000) + `":"1"}}` })))
	add("size", "4000 unknown fields", 400, device.CodeUnexpectedField, post(hJSON, jsonWith(func(c string) string {
		var b strings.Builder
		for i := 0; i < 4000; i++ {
			fmt.Fprintf(&b, `,"f%d":%d`, i, i)
		}
		return `{"control":{` + c + b.String() + `}}`
	})))

	// Slow clients: cut off by the server's timeouts.
	cs = append(cs,
		hostile{category: "slow", name: "headers one byte per second", cutOff: true,
			send: func(t *testing.T, h *hostileEnv) []answer {
				a, took := h.slow(t, []byte(request("POST", cmdPath, "{}", "Content-Type: application/json", "Content-Length: 2")), time.Second)
				if took > hostileHeaderTimeout+2*time.Second {
					t.Errorf("the server waited %s for the headers (ReadHeaderTimeout %s)", took, hostileHeaderTimeout)
				}
				return a
			}},
		hostile{category: "slow", name: "body one byte per 300ms", status: 408, code: device.CodeTimeout,
			send: func(t *testing.T, h *hostileEnv) []answer {
				body := string(h.dimJSON(`"42"`))
				head := request("POST", cmdPath, "", "Content-Type: application/json", cl(body))
				conn, err := net.Dial("tcp", h.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				conn.Write([]byte(head))
				go func() {
					for i := 0; i < len(body); i++ {
						if _, err := conn.Write([]byte{body[i]}); err != nil {
							return
						}
						time.Sleep(300 * time.Millisecond)
					}
				}()
				return readAnswers(conn, 1)
			}},
		hostile{category: "slow", name: "body shorter than its Content-Length", status: 408, code: device.CodeTimeout,
			send: rawSend(1, func(h *hostileEnv) string {
				body := string(h.dimJSON(`"42"`))
				return request("POST", cmdPath, body, "Content-Type: application/json", "Content-Length: "+strconv.Itoa(len(body)+100))
			})},
	)

	// Encodings: invalid UTF-8, NUL, byte order marks.
	add("encoding", "invalid UTF-8 in a JSON value", 400, malformed, post(hJSON, dimJ("\"4\xff2\"")))
	add("encoding", "invalid UTF-8 in a JSON key", 400, malformed,
		post(hJSON, jsonWith(func(c string) string {
			return strings.Replace(`{"control":{`+c+`}}`, `"dimming"`, "\"dim\xc3ming\"", 1)
		})))
	add("encoding", "overlong UTF-8", 400, malformed, post(hJSON, dimJ("\"\xc0\xb4\xc0\xb2\"")))
	add("encoding", "raw NUL in a JSON value", 400, malformed, post(hJSON, dimJ("\"4\x002\"")))
	add("encoding", "escaped NUL in a JSON value", 400, invalid, post(hJSON, dimJ(`"4\u00002"`)))
	add("encoding", "escaped NUL in a JSON key", 400, device.CodeUnexpectedField,
		post(hJSON, jsonWith(func(c string) string { return `{"control":{` + c + `,"dimming\u0000":"1"}}` })))
	add("encoding", "NUL in a name", 400, invalid, postTo(device.UpdateName.Path(), hJSON, renameJ(`"Hall\u0000"`)))
	add("encoding", "raw NUL in XML text", 400, malformed, post(hXML, dimX("4\x002")))
	add("encoding", "character reference to NUL in XML", 400, malformed, post(hXML, dimX("4&#0;2")))
	add("encoding", "invalid UTF-8 in XML", 400, malformed, post(hXML, dimX("4\xfe2")))
	add("encoding", "UTF-16 body", 400, malformed, post(hJSON, func(h *hostileEnv) []byte {
		b := []byte{0xff, 0xfe}
		for _, c := range h.dimJSON(`"42"`) {
			b = append(b, c, 0)
		}
		return b
	}))
	add("encoding", "byte order mark before JSON", 400, malformed, post(hJSON, func(h *hostileEnv) []byte {
		return append([]byte("\xef\xbb\xbf"), h.dimJSON(`"42"`)...)
	}))

	// Repetitions.
	add("duplicates", "JSON control twice", 400, malformed,
		post(hJSON, jsonWith(func(c string) string { return `{"control":{` + c + `},"control":{` + c + `}}` })))
	add("duplicates", "XML control twice", 400, malformed, post(hXML, func(h *hostileEnv) []byte {
		c := h.controlXML()
		return []byte("<xml><control>" + c + "</control><control>" + c + "</control></xml>")
	}))
	add("duplicates", "JSON field twice", 400, invalid, post(hJSON, jsonWith(func(c string) string { return `{"control":{` + c + `,"dimming":"43"}}` })))
	add("duplicates", "XML field twice", 400, invalid, post(hXML, func(h *hostileEnv) []byte {
		return []byte("<xml><control>" + h.controlXML() + "<dimming>43</dimming></control></xml>")
	}))
	add("duplicates", "sn and device_id naming different devices", 400, invalid,
		post(hJSON, jsonWith(func(c string) string { return `{"control":{` + c + `,"device_id":"` + snOf(thermostat) + `"}}` })))
	add("duplicates", "JSON api_key twice", 400, invalid,
		post(hJSON, jsonWith(func(c string) string { return `{"control":{"api_key":"key-b",` + c + `}}` })))

	// Numbers.
	add("numbers", "a thousand digits", 400, invalid, post(hJSON, dimJ(strings.Repeat("9", 1000))))
	add("numbers", "a thousand digits as a string", 400, invalid, post(hJSON, dimJ(`"`+strings.Repeat("9", 1000)+`"`)))
	add("numbers", "a thousand leading zeros", 400, invalid, post(hJSON, dimJ(`"`+strings.Repeat("0", 1000)+`42"`)))
	add("numbers", "exponent 4.25e1, not whole", 400, invalid, post(hJSON, dimJ("4.25e1")))
	add("numbers", "exponent 1e400", 400, invalid, post(hJSON, thermoJ("1e400")))
	add("numbers", "exponent as a string", 400, invalid, post(hJSON, thermoJ(`"2.6E1"`)))
	add("numbers", "NaN literal", 400, malformed, post(hJSON, thermoJ("NaN")))
	add("numbers", "NaN string", 400, invalid, post(hJSON, thermoJ(`"NaN"`)))
	add("numbers", "Infinity literal", 400, malformed, post(hJSON, thermoJ("Infinity")))
	add("numbers", "-Infinity string", 400, invalid, post(hJSON, thermoJ(`"-Infinity"`)))
	add("numbers", "Inf in XML", 400, invalid, post(hXML, func(h *hostileEnv) []byte {
		return simtest.Body(device.XML, h.c.Command(snOf(thermostat), thermostat, S("cooling_point", "+Inf")))
	}))
	add("numbers", "hexadecimal 0x2A", 400, invalid, post(hJSON, dimJ(`"0x2A"`)))
	add("numbers", "negative zero", 400, invalid, post(hJSON, dimJ("-0")))
	add("numbers", "2^63", 400, invalid, post(hJSON, dimJ("9223372036854775808")))

	// Types and injections in fields.
	add("injection", "a field as an object (NoSQL style)", 400, invalid, post(hJSON, dimJ(`{"$gt":0}`)))
	add("injection", "SQL in mac", 400, invalid, post(hJSON, jsonWith(func(c string) string {
		return `{"control":{` + strings.Replace(c, `"mac":"`+simtest.MACA+`"`, `"mac":"a4c138f0e2b1' OR '1'='1"`, 1) + `}}`
	})))
	add("injection", "path in sn", 400, invalid, post(hJSON, jsonWith(func(c string) string {
		return `{"control":{` + strings.Replace(c, snOf(dimmer), "../../../../etc/passwd", 1) + `}}`
	})))
	add("injection", "CRLF in message_value", 400, invalid, postTo(device.SendMessage.Path(), hJSON, func(h *hostileEnv) []byte {
		return simtest.Body(device.JSON, append(h.c.Envelope(), S("message_type", "message"), S("message_value", "a=1\r\nX-Injected: 1")))
	}))
	add("injection", "format field naming the other format", 400, invalid,
		post(hJSON, jsonWith(func(c string) string { return `{"control":{` + c + `,"format":"xml"}}` })))

	// Content-Type headers.
	add("content-type", "two different Content-Types", 415, device.CodeUnsupportedMediaType,
		post(http.Header{"Content-Type": {"application/xml", "application/json"}}, dimJ(`"42"`)))
	add("content-type", "the same Content-Type twice", 415, device.CodeUnsupportedMediaType,
		post(http.Header{"Content-Type": {"application/json", "application/json"}}, dimJ(`"42"`)))
	add("content-type", "a list in one Content-Type", 415, device.CodeUnsupportedMediaType,
		post(http.Header{"Content-Type": {"application/json, application/xml"}}, dimJ(`"42"`)))
	add("content-type", "a Content-Type of 10000 empty parameters", 415, device.CodeUnsupportedMediaType,
		post(http.Header{"Content-Type": {"application/json" + strings.Repeat(";", 10000)}}, dimJ(`"42"`)))
	add("content-type", "a parameter given twice with two values", 415, device.CodeUnsupportedMediaType,
		post(http.Header{"Content-Type": {"application/json; charset=utf-8; charset=latin1"}}, dimJ(`"42"`)))
	add("content-type", "charset utf-16", 415, device.CodeUnsupportedMediaType,
		post(http.Header{"Content-Type": {"application/json; charset=utf-16"}}, dimJ(`"42"`)))
	add("content-type", "JSON body declared XML", 400, malformed, post(hXML, dimJ(`"42"`)))

	// Headers.
	goOwn("headers", "5000 headers (over 64 KiB)", 431, rawSend(1, func(h *hostileEnv) string {
		hd := []string{"Content-Type: application/json", "Content-Length: 2"}
		for i := 0; i < 5000; i++ {
			hd = append(hd, "X-Hostile-"+strconv.Itoa(i)+": "+strings.Repeat("v", 10))
		}
		return request("POST", cmdPath, "{}", hd...)
	}))
	goOwn("headers", "one header of 100 KB", 431, rawSend(1, func(h *hostileEnv) string {
		return request("POST", cmdPath, "{}", "Content-Type: application/json", "Content-Length: 2", "X-Big: "+strings.Repeat("b", 100<<10))
	}))
	goOwn("headers", "NUL in a header value", 400, rawSend(1, func(h *hostileEnv) string {
		return request("POST", cmdPath, "{}", "Content-Type: application/json\x00", "Content-Length: 2")
	}))
	goOwn("headers", "space in a header name", 400, rawSend(1, func(h *hostileEnv) string {
		return request("POST", cmdPath, "{}", "Content Type: application/json", "Content-Length: 2")
	}))
	// net/http unfolds obs-fold (RFC 9112 5.2): the Content-Type then
	// reads "application/ json".
	add("headers", "a folded header line", 415, device.CodeUnsupportedMediaType, rawSend(1, func(h *hostileEnv) string {
		return request("POST", cmdPath, "{}", "Content-Type: application/", " json", "Content-Length: 2")
	}))
	goOwn("headers", "no Host in HTTP/1.1", 400, rawSend(1, func(h *hostileEnv) string {
		return "POST " + cmdPath + " HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	}))
	goOwn("headers", "two Host headers", 400, rawSend(1, func(h *hostileEnv) string {
		return request("POST", cmdPath, "{}", "Host: other", "Content-Type: application/json", "Content-Length: 2")
	}))

	// Framing and smuggling.
	goOwn("framing", "two different Content-Lengths", 400, rawSend(1, func(h *hostileEnv) string {
		body := string(h.dimJSON(`"42"`))
		return request("POST", cmdPath, body, "Content-Type: application/json", cl(body), "Content-Length: 5")
	}))
	goOwn("framing", "Content-Length with a sign", 400, rawSend(1, func(h *hostileEnv) string {
		body := string(h.dimJSON(`"42"`))
		return request("POST", cmdPath, body, "Content-Type: application/json", "Content-Length: +"+strconv.Itoa(len(body)))
	}))
	goOwn("framing", "Content-Length as a list", 400, rawSend(1, func(h *hostileEnv) string {
		body := string(h.dimJSON(`"42"`))
		return request("POST", cmdPath, body, "Content-Type: application/json", "Content-Length: "+strconv.Itoa(len(body))+", 5")
	}))
	// CL.TE: a front end going by Content-Length would pass "0\r\n\r\nG"
	// as the body; going by Transfer-Encoding (as net/http does, RFC 9112
	// 6.3) the body is empty and "G" starts the next request, which then
	// is "GPOST", an unknown method. Both are refused.
	cs = append(cs, hostile{category: "framing", name: "Content-Length and Transfer-Encoding (CL.TE)", answers: 2, status: 0,
		send: rawSend(2, func(h *hostileEnv) string {
			return request("POST", cmdPath, "0\r\n\r\nG", "Content-Type: application/json", "Content-Length: 6", "Transfer-Encoding: chunked") +
				request("POST", cmdPath, string(h.dimJSON(`"0"`)), "Content-Type: application/json", cl(string(h.dimJSON(`"0"`))))
		})})
	// TE.CL: the chunked body hides a second request that a Content-Length
	// reader would see as the next one; by Transfer-Encoding it is the
	// body, and not JSON.
	add("framing", "Transfer-Encoding and Content-Length (TE.CL)", 400, malformed, rawSend(1, func(h *hostileEnv) string {
		inner := request("POST", cmdPath, string(h.dimJSON(`"0"`)), "Content-Type: application/json", cl(string(h.dimJSON(`"0"`))))
		return request("POST", cmdPath, chunked(inner), "Content-Type: application/json", "Content-Length: 4", "Transfer-Encoding: chunked")
	}))
	// The answers net/http would give itself with a 5xx (RFC 9112 6.1, RFC
	// 9110 15.6.6) before our handler runs; the server's listener turns them
	// into our 400 (server/conn.go), since bad input never gets a 5xx.
	cs = append(cs,
		hostile{category: "framing", name: "Transfer-Encoding: gzip", status: 400, code: device.CodeMalformedBody,
			send: rawSend(1, func(h *hostileEnv) string {
				return request("POST", cmdPath, chunked("{}"), "Content-Type: application/json", "Transfer-Encoding: gzip")
			})},
		hostile{category: "framing", name: "Transfer-Encoding twice", status: 400, code: device.CodeMalformedBody,
			send: rawSend(1, func(h *hostileEnv) string {
				return request("POST", cmdPath, chunked("{}"), "Content-Type: application/json", "Transfer-Encoding: chunked",
					"Transfer-Encoding: chunked")
			})},
		hostile{category: "http-version", name: "HTTP/2.0 request line", status: 400, code: device.CodeBadRequest,
			send: rawSend(1, func(h *hostileEnv) string {
				return "POST " + cmdPath + " HTTP/2.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
			})},
	)
	cs = append(cs, hostile{category: "framing", name: "a pipeline of three bad requests", answers: 3,
		send: rawSend(3, func(h *hostileEnv) string {
			a := string(h.dimJSON(`"0"`))
			b := simtest.Body(device.JSON, h.c.Command(snOf(dimmer), thermostat, N("mode", `"Auto"`)))
			c := `{"control":{}}`
			return request("POST", cmdPath, a, "Content-Type: application/json", cl(a)) +
				request("POST", cmdPath, string(b), "Content-Type: application/json", cl(string(b))) +
				request("POST", cmdPath, c, "Content-Type: application/json", cl(c))
		})})
	cs = append(cs, hostile{category: "framing", name: "a body that overruns its Content-Length into the next request",
		answers: 2, goOwn: true, send: rawSend(2, func(h *hostileEnv) string {
			body := string(h.dimJSON(`"42"`))
			return request("POST", cmdPath, body, "Content-Type: application/json", "Content-Length: 20")
		})})
	cs = append(cs, hostile{category: "framing", name: "a smuggled request inside a JSON body", status: 400, code: malformed,
		send: post(hJSON, func(h *hostileEnv) []byte {
			return []byte(request("POST", cmdPath, string(h.dimJSON(`"42"`)), "Content-Type: application/json"))
		})})

	// HTTP versions.
	add("http-version", "HTTP/1.0 with a bad body", 400, malformed, rawSend(1, func(h *hostileEnv) string {
		return "POST " + cmdPath + " HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{]"
	}))
	// net/http ignores Transfer-Encoding in HTTP/1.0 (RFC 9112 6.1), so
	// the body has no length: it is empty.
	add("http-version", "HTTP/1.0 with Transfer-Encoding: chunked", 400, malformed, rawSend(1, func(h *hostileEnv) string {
		return "POST " + cmdPath + " HTTP/1.0\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
			chunked(string(h.dimJSON(`"42"`)))
	}))
	goOwn("http-version", "HTTP/0.9 request line", 400, rawSend(1, func(h *hostileEnv) string { return "GET /_sim/state\r\n\r\n" }))
	goOwn("http-version", "garbage version", 400, rawSend(1, func(h *hostileEnv) string {
		return "POST " + cmdPath + " HTTPS/1.1\r\nHost: x\r\n\r\n"
	}))
	goOwn("http-version", "PRI * HTTP/2.0 preface", 400, rawSend(1, func(h *hostileEnv) string {
		return "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	}))

	// Methods.
	for _, m := range []string{"FOOBAR", "post", "TRACE", "OPTIONS", strings.Repeat("M", 1000)} {
		name := m
		if len(name) > 20 {
			name = "a method of 1000 letters"
		}
		add("methods", name, 405, device.CodeMethodNotAllowed, func(t *testing.T, h *hostileEnv) []answer {
			return h.do(t, m, cmdPath, hJSON, h.dimJSON(`"42"`))
		})
	}
	goOwn("methods", "a method with a space", 400, rawSend(1, func(h *hostileEnv) string {
		return request("PO ST", cmdPath, "{}", "Content-Type: application/json", "Content-Length: 2")
	}))

	// Paths.
	adminPath := func(p string) func(*testing.T, *hostileEnv) []answer {
		return rawSend(1, func(h *hostileEnv) string { return request("GET", p, "") })
	}
	notFound := device.CodeNotFound
	add("paths", "/_sim/gateways/../state", 404, notFound, adminPath("/_sim/gateways/../state"))
	add("paths", "/_sim/gateways/%2e%2e/state", 404, notFound, adminPath("/_sim/gateways/%2e%2e/state"))
	add("paths", "/_sim/./state", 404, notFound, adminPath("/_sim/./state"))
	add("paths", "//_sim/state", 404, notFound, adminPath("//_sim/state"))
	add("paths", "/_sim/gateways/x/../../../../etc/passwd", 404, notFound, adminPath("/_sim/gateways/x/../../../../etc/passwd"))
	add("paths", "/v1/services/gateway/../gateway/command", 404, notFound, func(t *testing.T, h *hostileEnv) []answer {
		return h.raw(t, []byte(request("POST", "/v1/services/gateway/../gateway/command", string(h.dimJSON(`"42"`)),
			"Content-Type: application/json", cl(string(h.dimJSON(`"42"`))))), 1)
	})
	add("paths", "encoded slash in a mac", 404, "", adminPath("/_sim/gateways/a4c138f0e2b1%2F..%2Fx/messages"))
	add("paths", "NUL in the path", 404, notFound, adminPath("/_sim/state%00"))
	add("paths", "backslashes", 404, notFound, adminPath(`/_sim\state`))
	add("paths", "a path of 30000 characters", 404, notFound, adminPath("/"+strings.Repeat("a", 30000)))
	add("paths", "percent-encoded operation path, bad value", 400, invalid, func(t *testing.T, h *hostileEnv) []answer {
		body := string(h.dimJSON(`"0"`))
		return h.raw(t, []byte(request("POST", "/v1/services/gateway/%63ommand", body, "Content-Type: application/json", cl(body))), 1)
	})
	add("paths", "journal limit beyond int64", 400, invalid, adminPath("/_sim/journal?limit=99999999999999999999999"))
	add("paths", "journal limit negative", 400, invalid, adminPath("/_sim/journal?limit=-1"))
	add("paths", "reset with GET", 404, notFound, adminPath("/_sim/reset"))
	return cs
}

// billionLaughs is the classic entity-expansion DOCTYPE: lol9 would
// expand to 10^9 "lol"s.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE xml [<!ENTITY lol0 "lol">`)
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, `<!ENTITY lol%d "%s">`, i, strings.Repeat(fmt.Sprintf("&lol%d;", i-1), 10))
	}
	b.WriteString("]>")
	return b.String()
}

// TestHostileCatalog sends the whole catalog; see the comment at the top.
func TestHostileCatalog(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	h := startHostile(t)
	catalog := hostileCatalog()
	if len(catalog) < 50 {
		t.Errorf("the catalog has %d requests, want at least 50", len(catalog))
	}
	first := h.c.State()
	counts := map[string]int{}
	for _, tc := range catalog {
		counts[tc.category]++
		t.Run(tc.category+"/"+tc.name, func(t *testing.T) {
			before := h.c.State()
			answers := tc.send(t, h)
			checkHostile(t, tc, answers)
			for _, a := range answers {
				code, _ := errorOf(a)
				t.Logf("%d %s", a.status, code)
			}
			var health map[string]string
			h.c.AdminJSON(http.MethodGet, "/_sim/health", "", &health)
			if health["status"] != "ok" {
				t.Errorf("health after the request: %v", health)
			}
			if after := h.c.State(); !reflect.DeepEqual(before, after) {
				t.Errorf("the state changed:\n%s\nwas:\n%s", dump(after), dump(before))
			}
		})
	}
	if last := h.c.State(); !reflect.DeepEqual(first, last) {
		t.Errorf("the state changed over the catalog:\n%s\nwas:\n%s", dump(last), dump(first))
	}
	t.Logf("hostile catalog: %d requests: %v", len(catalog), counts)
}

func checkHostile(t *testing.T, tc hostile, answers []answer) {
	t.Helper()
	if tc.cutOff {
		for _, a := range answers {
			if a.status < 400 || a.status >= 500 {
				t.Errorf("want the connection cut off (or a 4xx), got %s", a)
			}
		}
		return
	}
	want := max(tc.answers, 1)
	if len(answers) != want {
		t.Errorf("got %d answers, want %d: %v", len(answers), want, answers)
	}
	for i, a := range answers {
		if tc.status != 0 && a.status != tc.status || a.status < 400 || a.status >= 500 {
			w := "a 4xx"
			if tc.status != 0 {
				w = strconv.Itoa(tc.status)
			}
			t.Errorf("answer %d: %s, want %s", i, a, w)
			continue
		}
		code, err := errorOf(a)
		if err != nil {
			if !tc.goOwn {
				t.Errorf("answer %d: %s: %v", i, a, err)
			}
			continue
		}
		if tc.code != "" && code != tc.code {
			t.Errorf("answer %d: %s, want the code %s", i, a, tc.code)
		}
		if a.status == http.StatusMethodNotAllowed && a.header.Get("Allow") == "" {
			t.Errorf("answer %d: 405 without Allow", i)
		}
	}
}

// errorOf reads our error answer in its Content-Type's format: its code,
// and an error unless it has status error, a code and a message.
func errorOf(a answer) (string, error) {
	mt, _, err := mime.ParseMediaType(a.header.Get("Content-Type"))
	if err != nil {
		return "", err
	}
	var status, code, message string
	switch mt {
	case "application/json":
		var j struct {
			Status string `json:"status"`
			Error  struct{ Code, Message string }
		}
		if err := json.Unmarshal(a.body, &j); err != nil {
			return "", err
		}
		status, code, message = j.Status, j.Error.Code, j.Error.Message
	case "application/xml":
		var x struct {
			XMLName xml.Name `xml:"xml"`
			Status  string   `xml:"status"`
			Code    string   `xml:"error>code"`
			Message string   `xml:"error>message"`
		}
		if err := xml.Unmarshal(a.body, &x); err != nil {
			return "", err
		}
		status, code, message = x.Status, x.Code, x.Message
	default:
		return "", fmt.Errorf("Content-Type %s is not ours", mt)
	}
	if status != "error" || code == "" || message == "" {
		return code, errors.New("not an error with a code and a message")
	}
	return code, nil
}
