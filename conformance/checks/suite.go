package checks

import (
	"context"
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/onsi/gomega"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/batch"
	"github.com/gwdmi/gwtools/conformance/internal/control"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// The cases of package catalog, each in its formats (family).
var _ = declares(200, (*Suite).declareCases)

// declareCases declares the checks of every case of package catalog.
func (env *Suite) declareCases() {
	for _, c := range catalog.Cases() {
		env.declare(c)
	}
}

// meta fills the metadata every check of a case shares; f is 0 for the
// parity check, which sends in both formats.
func caseMeta(c *catalog.Case, id string, level check.Level, f device.Format, title, assertion string, tags ...string) check.Meta {
	m := check.Meta{ID: id, Level: level, Section: c.Section, Title: title, Assertion: assertion,
		Operation: c.Op.Name(), DeviceType: c.Type, Tags: append(append([]string{}, c.Tags...), tags...),
		Traits: c.Traits(f == 0)}
	for _, r := range rules.For(c.ID) {
		m.Tags = append(m.Tags, report.RuleTag+r.ID)
	}
	if level != check.Must {
		m.Contract = c.Contract
	}
	if q := c.Want.Quote; q != "" && !c.Want.OK && !c.Want.ContractOK {
		m.Assertion += " The sentence that forbids it (" + oracle.Texts(q) + "): “" + q + "”"
		m.Quote = q
		if i := c.Want.Inference; i != "" && level == check.Must {
			m.Assertion += "; read with it: " + i + "."
			m.Inference = i
		}
	}
	if f != 0 {
		m.Format = f.String()
		m.Title += " (" + f.String() + ")"
	}
	return m
}

func (env *Suite) declare(c catalog.Case) {
	// Levels follow the source of the sentence (oracle.MustLevel): a
	// refusal that rests on the CONTRACT alone keeps its SHOULD checks
	// and has no MUST one.
	c.Want.Must = c.Want.Must && oracle.MustLevel(c.Want.Quote, c.Want.Inference)
	for _, f := range c.InFormats() {
		f := f
		id := c.ID + "." + f.String()
		one := []device.Format{f}
		refusal := !c.Want.OK && !c.Want.ContractOK
		switch {
		case c.Want.OK:
			env.ItPlanned(caseMeta(&c, id, check.Must, f, capital(c.Title)+" is answered with success",
				capital(c.Title)+" MUST be answered with status success."), batch.Plan{Case: c, Formats: one}, func(ctx context.Context) {
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid request was not accepted: %s", link.Describe(r))
			})
		case c.Want.ContractOK:
			env.ItPlanned(caseMeta(&c, id, check.Should, f, capital(c.Title)+" is answered with success",
				capital(c.Title)+" SHOULD be answered 200 with status success (CONTRACT "+c.Contract+")."), batch.Plan{Case: c, Formats: one}, func(ctx context.Context) {
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "the request was not accepted: %s", link.Describe(r))
			})
		case c.Want.Must:
			env.ItPlanned(caseMeta(&c, id, check.Must, f, capital(c.Title)+" is rejected",
				capital(c.Title)+" MUST NOT be answered with success."), batch.Plan{Case: c, Formats: one, Refusal: true}, func(ctx context.Context) {
				ctl := env.caseControl(ctx, c, f)
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeFalse(), "an invalid request was accepted: %s", link.Describe(r))
				ctl.Conclude(ctx)
			})
		}
		if refusal {
			env.ItPlanned(caseMeta(&c, id+".contract", check.Should, f, capital(c.Title)+" gets the CONTRACT's error",
				capital(c.Title)+" SHOULD be answered "+c.Want.String(f)+"."), batch.Plan{Case: c, Formats: one, Refusal: true}, func(ctx context.Context) {
				ctl := env.caseControl(ctx, c, f)
				r := env.sendCase(ctx, c, f)
				if !ctl.OK && !link.Accepted(r) {
					ctl.Conclude(ctx) // its error may be the credentials', not the case's
				}
				expectError(ctx, r, c.Want, f)
				ctl.Conclude(ctx)
			})
		}
		if c.Want.OK && slices.Contains(c.Tags, "valid") {
			m := caseMeta(&c, id+".contract", check.Should, f, capital(c.Title)+" gets 200 in the request's format",
				capital(c.Title)+" SHOULD be answered 200 with a "+f.String()+" body and Content-Type (CONTRACT 4).")
			m.Section = "2.5" // the response's status field
			env.ItPlanned(m, batch.Plan{Case: c, Formats: one}, func(ctx context.Context) {
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(r.Status).To(gomega.Equal(200), "status: %s", link.Describe(r))
				expectFormat(ctx, r, f)
				trial.From(ctx).Expect(r.StatusField).To(gomega.Equal("success"))
			})
		}
		if !c.NoSim {
			env.declareSim(c, f, id)
		}
	}
	if len(c.InFormats()) == 2 {
		level := check.Should
		if c.Want.OK || c.Want.Must {
			level = check.Must
		}
		// The published interface shows no status codes (its section 7):
		// a MUST parity judges the verdict alone, and reports the status
		// codes; the CONTRACT gives each answer one status, so a SHOULD
		// parity judges both.
		assertion := " MUST get the same verdict in JSON as in XML."
		if level == check.Should {
			assertion = " SHOULD get the same verdict and status code in JSON as in XML."
		}
		env.ItPlanned(caseMeta(&c, c.ID+".parity", level, 0, capital(c.Title)+": JSON and XML agree",
			capital(c.Title)+assertion, "parity"),
			batch.Plan{Case: c, Formats: []device.Format{device.JSON, device.XML}, Refusal: !c.Want.OK && !c.Want.ContractOK}, func(ctx context.Context) {
				refusal := !c.Want.OK && !c.Want.ContractOK
				var ctls []control.Result
				if refusal {
					ctls = append(ctls, env.caseControl(ctx, c, device.JSON), env.caseControl(ctx, c, device.XML))
				}
				trial.From(ctx).By("sending the case in JSON")
				rj := env.sendCase(ctx, c, device.JSON)
				trial.From(ctx).By("sending the case in XML")
				rx := env.sendCase(ctx, c, device.XML)
				trial.From(ctx).Expect(link.Accepted(rx)).To(gomega.Equal(link.Accepted(rj)), "JSON: %s; XML: %s", link.Describe(rj), link.Describe(rx))
				if refusal && !link.Accepted(rj) && !link.Accepted(rx) {
					for _, ctl := range ctls {
						ctl.Conclude(ctx) // both refused: alike only if the valid ones are accepted
					}
				}
				if !refusal && !link.Accepted(rj) && !link.Accepted(rx) {
					// A valid request refused in both formats: its own checks
					// fail; that the formats agree in refusing it proves nothing.
					control.Result{What: "the valid request was refused in both formats (JSON: " + link.Describe(rj) + "; XML: " + link.Describe(rx) + ")"}.Conclude(ctx)
				}
				if level == check.Must {
					if rx.Status != rj.Status {
						observe(ctx, "status codes differ (JSON: %s; XML: %s): no published sentence states them; reported, not judged", link.Describe(rj), link.Describe(rx))
					}
					return
				}
				trial.From(ctx).Expect(rx.Status).To(gomega.Equal(rj.Status), "JSON: %s; XML: %s", link.Describe(rj), link.Describe(rx))
			})
	}
}

// sendCase builds a case's request, arranges for the device to be put back
// afterwards, and sends it.
func (env *Suite) sendCase(ctx context.Context, c catalog.Case, f device.Format) *client.Response {
	trial.Helper()
	_, r := env.sendCaseCall(ctx, c, f)
	return r
}

func (env *Suite) sendCaseCall(ctx context.Context, c catalog.Case, f device.Format) (catalog.Call, *client.Response) {
	trial.Helper()
	req := env.buildCase(ctx, c, f)
	env.PutBack(ctx, req)
	trial.From(ctx).By(fmt.Sprintf("sending %s in %s", c.Title, f))
	return req, env.Send(ctx, req, f)
}

func (env *Suite) buildCase(ctx context.Context, c catalog.Case, f device.Format) catalog.Call {
	trial.Helper()
	req, skip := c.Build(&env.Bench, f, c.ID)
	if skip != "" {
		trial.From(ctx).Skip(skip)
	}
	return req
}

// expectError checks an answer against the CONTRACT's error: each part
// of it a sentence states (catalog.Expectation.Parts) is judged; each
// part no sentence states is reported, never failed (the CONTRACT's
// preamble: "an answer's detail that neither text states ... is never
// failed, at any level").
func expectError(ctx context.Context, r *client.Response, w catalog.Expectation, f device.Format) {
	trial.Helper()
	for _, p := range w.Parts(f) {
		if p.Info() {
			// Reported where the answer differs from gwsim's, which a
			// report reader may compare with their own service.
			if got := answered(r, p.What); !slices.Contains(strings.Split(p.Want, " or "), strings.Trim(got, `"`)) {
				observe(ctx, "%s: %s, where gwsim gives %s; no sentence states it: reported, not judged", p.What, got, p.Want)
			}
			continue
		}
		switch p.What {
		case "status":
			trial.From(ctx).Expect(r.Status).To(gomega.Equal(w.Status), "status code: %s", link.Describe(r))
		case "format":
			formats := w.ErrorFormats(f)
			expectFormat(ctx, r, formats[0], formats[1:]...)
			trial.From(ctx).Expect(r.StatusField).To(gomega.Equal("error"), "status field: %s", link.Describe(r))
			trial.From(ctx).Expect(r.ErrorMessage).NotTo(gomega.BeEmpty(), "the error has no message")
		case "code":
			trial.From(ctx).Expect(w.Codes).To(gomega.ContainElement(r.ErrorCode), "error code: %s", link.Describe(r))
		case "field":
			trial.From(ctx).Expect(r.ErrorField).To(gomega.Equal(p.Want), "error field: %s", link.Describe(r))
		case "Allow":
			trial.From(ctx).Expect(r.Header.Get("Allow")).To(gomega.ContainSubstring("POST"), "Allow header")
		}
	}
}

// answered is what the answer carried for a part of it.
func answered(r *client.Response, what string) string {
	var v string
	switch what {
	case "status":
		v = fmt.Sprint(r.Status)
	case "code":
		v = r.ErrorCode
	case "field":
		v = r.ErrorField
	case "Allow":
		v = r.Header.Get("Allow")
	}
	if v == "" {
		return "none"
	}
	return fmt.Sprintf("%q", v)
}

// expectFormat checks that the body and its Content-Type are of format
// f, or of one of the formats given after it.
func expectFormat(ctx context.Context, r *client.Response, f device.Format, or ...device.Format) {
	trial.Helper()
	mt, _, _ := mime.ParseMediaType(r.ContentType)
	media := map[device.Format][]string{device.JSON: {"application/json"}, device.XML: {"application/xml", "text/xml"}}
	for _, g := range or {
		if g != f && slices.Contains(media[g], mt) {
			f = g // the answer is in one of the other formats allowed
		}
	}
	trial.From(ctx).Expect(media[f]).To(gomega.ContainElement(mt), "Content-Type %q is not %s", r.ContentType, f)
	trial.From(ctx).Expect(r.Format).To(gomega.Equal(f), "body read as %s", r.Format)
	trial.From(ctx).Expect(r.ParseError).To(gomega.BeEmpty(), "the %s body cannot be read", f)
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
