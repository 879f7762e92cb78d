package conformance

import (
	"context"
	"fmt"
	"mime"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/conformance/trial"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// declareChecks declares every check of the suite, each reading env, the
// run's own Env, when it runs. The container is Ordered: Ginkgo runs the
// checks in the order they are declared (else it sorts the specs of a
// container by where they are declared, then by their text, and every
// check is declared by check.It), and ContinueOnFailure: a failed check
// does not skip the rest. The checks run ahead of their place (ahead.go)
// go in the same order.
func (env *Env) declareChecks() {
	ginkgo.Describe(suiteText, ginkgo.Ordered, ginkgo.ContinueOnFailure, env.declareAll)
}

// suiteText is the container of every check: part of each spec's text.
const suiteText = "Gateway Device Management Interface"

// declareAll declares every check, in the order a serial run runs them.
func (env *Env) declareAll() {
	for _, c := range catalog.Cases() {
		env.declare(c)
	}
	// The probes before the effect checks: they are about one device each
	// and run ahead with the cases against a far target (ahead.go), and
	// each effect check then reads the state they left, in every run.
	env.declareProbes()
	env.declareEffects()
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

func (env *Env) declare(c catalog.Case) {
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
			env.itPlanned(caseMeta(&c, id, check.Must, f, capital(c.Title)+" is answered with success",
				capital(c.Title)+" MUST be answered with status success."), plan{c: c, formats: one}, func(ctx context.Context) {
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid request was not accepted: %s", describe(r))
			})
		case c.Want.ContractOK:
			env.itPlanned(caseMeta(&c, id, check.Should, f, capital(c.Title)+" is answered with success",
				capital(c.Title)+" SHOULD be answered 200 with status success (CONTRACT "+c.Contract+")."), plan{c: c, formats: one}, func(ctx context.Context) {
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "the request was not accepted: %s", describe(r))
			})
		case c.Want.Must:
			env.itPlanned(caseMeta(&c, id, check.Must, f, capital(c.Title)+" is rejected",
				capital(c.Title)+" MUST NOT be answered with success."), plan{c: c, formats: one, refusal: true}, func(ctx context.Context) {
				ctl := env.caseControl(ctx, c, f)
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeFalse(), "an invalid request was accepted: %s", describe(r))
				ctl.conclude(ctx)
			})
		}
		if refusal {
			env.itPlanned(caseMeta(&c, id+".contract", check.Should, f, capital(c.Title)+" gets the CONTRACT's error",
				capital(c.Title)+" SHOULD be answered "+c.Want.String(f)+"."), plan{c: c, formats: one, refusal: true}, func(ctx context.Context) {
				ctl := env.caseControl(ctx, c, f)
				r := env.sendCase(ctx, c, f)
				if !ctl.ok && !link.Accepted(r) {
					ctl.conclude(ctx) // its error may be the credentials', not the case's
				}
				expectError(ctx, r, c.Want, f)
				ctl.conclude(ctx)
			})
		}
		if c.Want.OK && hasTag(c.Tags, "valid") {
			m := caseMeta(&c, id+".contract", check.Should, f, capital(c.Title)+" gets 200 in the request's format",
				capital(c.Title)+" SHOULD be answered 200 with a "+f.String()+" body and Content-Type (CONTRACT 4).")
			m.Section = "2.5" // the response's status field
			env.itPlanned(m, plan{c: c, formats: one}, func(ctx context.Context) {
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(r.Status).To(gomega.Equal(200), "status: %s", describe(r))
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
		env.itPlanned(caseMeta(&c, c.ID+".parity", level, 0, capital(c.Title)+": JSON and XML agree",
			capital(c.Title)+" "+map[check.Level]string{check.Must: "MUST", check.Should: "SHOULD"}[level]+
				" get the same verdict and status code in JSON as in XML.", "parity"),
			plan{c: c, formats: []device.Format{device.JSON, device.XML}, refusal: !c.Want.OK && !c.Want.ContractOK}, func(ctx context.Context) {
				refusal := !c.Want.OK && !c.Want.ContractOK
				var ctls []controlResult
				if refusal {
					ctls = append(ctls, env.caseControl(ctx, c, device.JSON), env.caseControl(ctx, c, device.XML))
				}
				trial.From(ctx).By("sending the case in JSON")
				rj := env.sendCase(ctx, c, device.JSON)
				trial.From(ctx).By("sending the case in XML")
				rx := env.sendCase(ctx, c, device.XML)
				trial.From(ctx).Expect(link.Accepted(rx)).To(gomega.Equal(link.Accepted(rj)), "JSON: %s; XML: %s", describe(rj), describe(rx))
				if refusal && !link.Accepted(rj) && !link.Accepted(rx) {
					for _, ctl := range ctls {
						ctl.conclude(ctx) // both refused: alike only if the valid ones are accepted
					}
				}
				if !refusal && !link.Accepted(rj) && !link.Accepted(rx) {
					// A valid request refused in both formats: its own checks
					// fail; that the formats agree in refusing it proves nothing.
					controlResult{what: "the valid request was refused in both formats (JSON: " + describe(rj) + "; XML: " + describe(rx) + ")"}.conclude(ctx)
				}
				trial.From(ctx).Expect(rx.Status).To(gomega.Equal(rj.Status), "JSON: %s; XML: %s", describe(rj), describe(rx))
			})
	}
}

// itPlanned declares a check whose requests may be sent concurrently
// with the other checks of a slow device (concurrent.go).
func (env *Env) itPlanned(m check.Meta, p plan, body func(context.Context)) bool {
	env.planCheck(m, p)
	return env.itAbout(m, env.caseKey(p.c, p.formats[0]), func(ctx context.Context) {
		env.concurrently(ctx, m.ID, body)
	})
}

// sendCase builds a case's request, arranges for the device to be put back
// afterwards, and sends it.
func (env *Env) sendCase(ctx context.Context, c catalog.Case, f device.Format) *client.Response {
	ginkgo.GinkgoHelper()
	_, r := env.sendCaseCall(ctx, c, f)
	return r
}

func (env *Env) sendCaseCall(ctx context.Context, c catalog.Case, f device.Format) (catalog.Call, *client.Response) {
	ginkgo.GinkgoHelper()
	req := env.buildCase(ctx, c, f)
	env.putBack(ctx, req)
	trial.From(ctx).By(fmt.Sprintf("sending %s in %s", c.Title, f))
	return req, env.send(ctx, req, f)
}

func (env *Env) buildCase(ctx context.Context, c catalog.Case, f device.Format) catalog.Call {
	ginkgo.GinkgoHelper()
	req, skip := c.Build(&env.Bench, f, c.ID)
	if skip != "" {
		trial.From(ctx).Skip(skip)
	}
	return req
}

// expectError checks an answer against the CONTRACT's error.
func expectError(ctx context.Context, r *client.Response, w catalog.Expectation, f device.Format) {
	ginkgo.GinkgoHelper()
	trial.From(ctx).Expect(r.Status).To(gomega.Equal(w.Status), "status code: %s", describe(r))
	expectFormat(ctx, r, w.ErrorFormat(f))
	trial.From(ctx).Expect(r.StatusField).To(gomega.Equal("error"), "status field: %s", describe(r))
	if len(w.Codes) > 0 {
		trial.From(ctx).Expect(w.Codes).To(gomega.ContainElement(r.ErrorCode), "error code: %s", describe(r))
	}
	if w.Field != "" {
		// Errors name the field as the request wrote it ("cooling point" in JSON).
		trial.From(ctx).Expect(r.ErrorField).To(gomega.Equal(w.WireField(f)), "error field: %s", describe(r))
	}
	trial.From(ctx).Expect(r.ErrorMessage).NotTo(gomega.BeEmpty(), "the error has no message")
	if w.Allow {
		trial.From(ctx).Expect(r.Header.Get("Allow")).To(gomega.ContainSubstring("POST"), "Allow header")
	}
}

// expectFormat checks that the body and its Content-Type are of format f.
func expectFormat(ctx context.Context, r *client.Response, f device.Format) {
	ginkgo.GinkgoHelper()
	mt, _, _ := mime.ParseMediaType(r.ContentType)
	want := map[device.Format][]string{device.JSON: {"application/json"}, device.XML: {"application/xml", "text/xml"}}[f]
	trial.From(ctx).Expect(want).To(gomega.ContainElement(mt), "Content-Type %q is not %s", r.ContentType, f)
	trial.From(ctx).Expect(r.Format).To(gomega.Equal(f), "body read as %s", r.Format)
	trial.From(ctx).Expect(r.ParseError).To(gomega.BeEmpty(), "the %s body cannot be read", f)
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func hasTag(tags []string, t string) bool {
	for _, x := range tags {
		if x == t {
			return true
		}
	}
	return false
}
