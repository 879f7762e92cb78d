package checks

import (
	"context"
	"net/http"

	"github.com/onsi/gomega"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// grammarProbes send the generated forms the texts leave open (package
// oracle, nearmiss.go): the JSON texts RFC 8259 leaves to the
// implementation, the XML documents neither text decides (attributes,
// namespaces, other versions and encodings), and the paths a faithful
// service may read as the operation's (a trailing slash, dot segments).
// They report what the target did and judge nothing.
func (env *Suite) grammarProbes() []probe {
	op := device.SendMessage
	bodies := func(f device.Format, ms []oracle.NearMiss) func(ctx context.Context, format device.Format) {
		return func(ctx context.Context, format device.Format) {
			for _, m := range ms {
				if !m.Verdict.Open && !(f == device.XML && catalog.HeldBack(m.Slug)) {
					continue
				}
				c := env.Base(op, "", "")
				valid := catalog.Encoded(&env.Bench, c, f)
				edit := m.Edit
				c.Raw = func(device.Format) []byte { return []byte(edit(string(valid))) }
				_, got := env.ask(ctx, c, f)
				why := m.Verdict.Why
				if !m.Verdict.Open {
					why = "refused by " + m.Inference + "; probed until the reference simulator refuses it"
				}
				observe(ctx, "a body %s (%s): %s", m.Title, why, got)
			}
		}
	}
	ps := []probe{
		{id: "open-forms.message.json-text", section: "2.1", contract: "2", op: op,
			title: "what the target does with the JSON texts RFC 8259 leaves to the implementation",
			run:   bodies(device.JSON, oracle.JSONTextNearMisses()), formats: []device.Format{device.JSON}},
		{id: "open-forms.message.xml-document", section: "2.1", contract: "2", op: op,
			title: "what the target does with the XML documents neither text decides",
			run:   bodies(device.XML, oracle.XMLDocumentNearMisses()), formats: []device.Format{device.XML}},
	}
	for _, o := range device.Operations {
		o := o
		ps = append(ps, probe{id: "open-forms." + o.Name() + ".path", section: "9", contract: "2", op: o,
			title: "what the target does with the forms of the " + o.Name() + " path that neither text decides",
			run: func(ctx context.Context, f device.Format) {
				d, ok := env.AnyDevice()
				if !ok && o != device.SendMessage {
					trial.From(ctx).Skip("the fleet has no device")
				}
				for _, m := range oracle.PathNearMisses(o.Path()) {
					if !m.Verdict.Open {
						continue
					}
					c := env.Base(o, d.SN, d.Type)
					c.Path = m.Text
					env.PutBack(ctx, c)
					r, got := env.ask(ctx, c, f)
					if link.Accepted(r) {
						// Taken as the operation: what it changed is
						// awaited as the operation's own change.
						req := c.Request(f)
						req.Path = o.Path()
						env.Link().Track(req, r)
					}
					observe(ctx, "%s %s (%s): %s", o.Name(), m.Title, m.Verdict.Why, got)
				}
			}})
	}
	return ps
}

// declareHeadChecks judge HEAD on every operation's path, whose answer
// has no body (RFC 9110 9.3.2), so the CONTRACT's error payload cannot be
// read: the MUST check asks that it is not answered 2xx (a HEAD is not the
// operation, published 1: "Every operation is a POST."), the SHOULD check
// that it is answered 405 with Allow: POST (CONTRACT 2).
func (env *Suite) declareHeadChecks() {
	var head oracle.NearMiss
	for _, m := range oracle.MethodNearMisses() {
		if m.Text == http.MethodHead {
			head = m
		}
	}
	for oi, op := range device.Operations {
		op := op
		c := catalog.Case{ID: op.Name() + ".method.head", Op: op, Section: "4", Contract: "2", Tags: []string{"transport", catalog.GenTag + "http-method"},
			Formats: catalog.Alternate(oi),
			Title:   "a " + op.Name() + " request sent with HEAD", NoSim: true,
			Want: catalog.Expectation{Must: true, Status: 405, Codes: []string{device.CodeMethodNotAllowed}, Allow: true, Quote: head.Verdict.Quote},
			Build: catalog.OnOp(op, func(_ *catalog.Bench, c *catalog.Call, _ device.Format, _ string) string {
				c.Method = http.MethodHead
				return ""
			})}
		for _, f := range c.InFormats() {
			f := f
			id := c.ID + "." + f.String()
			m := caseMeta(&c, id, check.Must, f, capital(c.Title)+" is rejected",
				capital(c.Title)+" MUST NOT be answered 2xx (its answer has no body: a 2xx is the operation's success); read with it: "+head.Inference+".")
			env.ItAbout(m, env.CaseKey(c, f), func(ctx context.Context) {
				ctl := env.caseControl(ctx, c, f)
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(r.Status/100).NotTo(gomega.Equal(2), "HEAD was answered as allowed: %s", link.Describe(r))
				ctl.Conclude(ctx)
			})
			ms := caseMeta(&c, id+".contract", check.Should, f, capital(c.Title)+" gets the CONTRACT's 405",
				capital(c.Title)+" SHOULD be answered 405 with Allow: POST (CONTRACT: “"+oracle.QuoteMethodOther+"”; a HEAD answer has no body).")
			env.ItAbout(ms, env.CaseKey(c, f), func(ctx context.Context) {
				r := env.sendCase(ctx, c, f)
				trial.From(ctx).Expect(r.Status).To(gomega.Equal(http.StatusMethodNotAllowed), "status code: %s", link.Describe(r))
				trial.From(ctx).Expect(r.Header.Get("Allow")).To(gomega.ContainSubstring("POST"), "Allow header")
			})
		}
	}
}
