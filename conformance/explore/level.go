package explore

import (
	"fmt"
	"strings"

	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Levels of a disagreement, as gwconform run's checks have them: MUST where
// the published interface decides, SHOULD where only the CONTRACT does.
const (
	MUST   = "MUST"
	SHOULD = "SHOULD"
)

// Leveler is implemented by Rules that know whether their verdict on an
// operation's own fields follows from the published interface (true) or
// only from the CONTRACT (false). Rules without it are taken as MUST.
type Leveler interface {
	Must(op Op) bool
}

// Must is the oracle's Verdict.Must on op's own fields (valid envelope).
func (r *oracleRules) Must(op Op) bool {
	var own []oracle.Sent
	var dop device.Operation
	switch op.Kind {
	case Command:
		dop = device.SendCommand
		own = []oracle.Sent{{Key: device.FieldSN, Value: oracle.Str(oracle.SN.Example)}, {Key: device.FieldType, Value: oracle.Str(op.Type)}}
		for _, kv := range op.Fields {
			v := oracle.Str(kv.Value)
			if kv.Number && op.Format == "json" {
				v = oracle.Num(kv.Value)
			}
			own = append(own, oracle.Sent{Key: r.Wire(op.Type, kv.Key, op.Format), Value: v})
		}
	case Rename:
		dop = device.UpdateName
		name, _ := op.field("name")
		own = []oracle.Sent{{Key: device.FieldSN, Value: oracle.Str(oracle.SN.Example)}, {Key: device.FieldName, Value: oracle.Str(name)}}
	case Message:
		dop = device.SendMessage
		mt, _ := op.field("message_type")
		mv, _ := op.field("message_value")
		own = []oracle.Sent{{Key: device.FieldMessageType, Value: oracle.Str(mt)}, {Key: device.FieldMessageValue, Value: oracle.Str(mv)}}
	default:
		return true
	}
	sent := []oracle.Sent{
		{Key: device.FieldAPIKey, Value: oracle.Str(oracle.APIKey.Example)},
		{Key: device.FieldTimestamp, Value: oracle.Str(oracle.TimestampF.Example)},
		{Key: device.FieldSign, Value: oracle.Str(oracle.Sign.Example)},
		{Key: device.FieldAccount, Value: oracle.Str(oracle.Account.Example)},
		{Key: device.FieldMAC, Value: oracle.Str(oracle.MAC.Example)},
	}
	return oracle.Judge(dop, formatOf(op.Format), append(sent, own...)).Must
}

// Judgement places a disagreement: its level, the rule of
// conformance/rules/rules.yaml it falls under, and that rule's sentence.
type Judgement struct {
	Level string `json:"level"`
	Rule  string `json:"rule,omitempty"`
	Quote string `json:"quote,omitempty"`
}

// RuleQuote is a rule's source and sentence as reports quote it; "" for
// an ID rules.yaml does not hold.
func RuleQuote(id string) string {
	r, ok := rules.Lookup(id)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s (%s): %q", r.Source, r.Level, r.Text)
}

func judgement(level, rule string) Judgement {
	return Judgement{Level: level, Rule: rule, Quote: RuleQuote(rule)}
}

// must is the level of op's own fields under rs.
func must(rs Rules, op Op) bool {
	if l, ok := rs.(Leveler); ok {
		return l.Must(op)
	}
	return true
}

// Classify places the disagreement on a POST operation: the model's
// verdict v, and what came. A valid request refused, or a forbidden one
// accepted, is at the level of the sentence that decides it; two
// refusals that differ in status, code or field are the CONTRACT's
// (SHOULD: the published interface fixes no error code).
func Classify(rs Rules, op Op, v Verdict, got Result) Judgement {
	level := SHOULD
	switch {
	case got.Err != "":
		return judgement(MUST, "C-4.answers")
	case v.Expect.Status == 200 && !got.Answer.Success:
		if must(rs, op) {
			level = MUST
		}
	case v.Expect.Status != 200 && got.Answer.Success:
		level = MUST
		if len(v.Expect.Codes) > 0 && v.Expect.Status == 400 {
			// A value refusal: MUST only where the published grammar
			// forbids the value.
			if !must(rs, op) {
				level = SHOULD
			}
		}
	}
	if r := WireRule(op.Wire); r != "" {
		return judgement(level, r)
	}
	return judgement(level, ruleOf(op, v, got.Answer, must(rs, op)))
}

// ruleOf names the rule an answer disagreement falls under; published
// says the rule table's verdict on op's own fields follows from the
// published interface (its rule, else the CONTRACT's).
func ruleOf(op Op, v Verdict, got Answer, published bool) string {
	code := ""
	if len(v.Expect.Codes) > 0 {
		code = v.Expect.Codes[0]
	}
	accepted := got.Success
	switch code {
	case device.CodeUnknownAPIKey, device.CodeAccountMismatch:
		if accepted {
			return "API-5.authentication"
		}
		return "C-1.unknown-key"
	case device.CodeBadSignature:
		if accepted {
			return "API-5.authentication"
		}
		return "C-1.sign"
	case device.CodeGatewayNotFound, device.CodeDeviceNotFound:
		if accepted {
			return "API-5.account-gateways"
		}
		return "C-3.not-found"
	case device.CodeTypeMismatch:
		return "C-3.not-found"
	case device.CodeUnexpectedField:
		return "C-2.unexpected"
	}
	if strings.HasPrefix(op.Note, "no device field") {
		return "C-3.at-least-one"
	}
	if v.Expect.Status != 200 && !accepted {
		// Refused as the rule table says, with another status, code or
		// field: CONTRACT 4's answers.
		return "C-4.answers"
	}
	// A value: the field the model names, else the one the target named,
	// else the operation's first.
	field := v.Expect.Field
	if field == "" && got.Field != "" {
		for _, kv := range op.Fields {
			if kv.Key == got.Field || strings.EqualFold(strings.ReplaceAll(kv.Key, "_", " "), got.Field) {
				field = kv.Key
			}
		}
	}
	if field == "" && len(op.Fields) > 0 {
		field = op.Fields[0].Key
	}
	return fieldRule(field, published)
}

// fieldRule is the rule of a field's values: the published one (MUST) or
// the CONTRACT's reading of it (SHOULD).
func fieldRule(field string, must bool) string {
	pick := func(m, s string) string {
		if must {
			return m
		}
		return s
	}
	switch strings.ReplaceAll(field, " ", "_") {
	case "io", "Relay1", "Relay2":
		return pick("API-2.3.on-off", "C-2.enum-case")
	case "mode":
		return pick("API-2.3.mode", "C-2.enum-case")
	case "fan":
		return pick("API-2.3.fan", "C-2.enum-case")
	case "cooling_point", "heating_point":
		return pick("API-2.3.points", "C-3.points-range")
	case "code":
		return pick("API-2.3.code", "C-2.number-forms")
	case "dimming":
		return pick("API-2.3.dimming", "C-2.number-forms")
	case "opt":
		return pick("API-2.3.opt", "C-3.opt")
	case "name":
		return pick("API-2.2.name", "C-3.name")
	case "message_type", "message_value":
		return pick("API-2.4.message", "C-3.message_value")
	}
	return pick("API-2.3.type-fields", "C-4.answers")
}

// stateJudgement places a disagreement on an observed state: MUST when
// every request that changed it since it was read was one the published
// interface calls valid (CONTRACT 7's observer shows what the request
// said); SHOULD when a refused request, or one only the CONTRACT calls
// valid, touched it (CONTRACT 3: a rejected request changes nothing).
func stateJudgement(soft bool) Judgement {
	if soft {
		return judgement(SHOULD, "C-3.rejected-changes-nothing")
	}
	return Judgement{Level: MUST, Rule: "C-3.rejected-changes-nothing", Quote: RuleQuote("C-3.rejected-changes-nothing") +
		"; an accepted request the published interface calls valid MUST leave the state it says, as the observer shows (CONTRACT 7)"}
}

// linearizabilityJudgement places a concurrent history no order explains.
func linearizabilityJudgement() Judgement {
	return Judgement{Level: MUST, Rule: "linearizability",
		Quote: "gwconform's reading: the interface describes one service; every operation takes effect at one instant between its request and its answer (CONTRACT 7 reads included)"}
}
