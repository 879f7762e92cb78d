package catalog

import (
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Cases of the operations' own fields (published 2.2 to 2.4): type,
// format, device_id, message_type, message_value and name.

// operationCases change one operation field of each operation.
func operationCases() []Case {
	var cs []Case
	cmd := func(id, title, section, contract string, change func(*Bench, *Call, device.Format, string) string, w Expectation) {
		cs = append(cs, Case{ID: "command." + id, Op: device.SendCommand, Title: "a command " + title, Section: section,
			Contract: contract, Build: OnOp(device.SendCommand, change), Want: w, Tags: []string{"edge"}})
	}
	cmd("type.missing", "without type", "4.1", "2", func(_ *Bench, c *Call, _ device.Format, _ string) string {
		c.Drop(device.FieldType)
		return ""
	}, missingField(device.FieldType))
	// CONTRACT 2 states the status alone: the code, and the field named
	// (device_id or sn), are the service's to choose.
	cmd("device_id.differs", "whose device_id names another device than sn", "2.2", "2",
		func(e *Bench, c *Call, _ device.Format, id string) string {
			c.Set(device.FieldDeviceID, hexN(e.Faker(id), 32))
			return ""
		}, Expectation{Status: 400, Codes: []string{device.CodeInvalidField}, Field: device.FieldDeviceID, Said: []string{oracle.QuoteDeviceIDBoth}})

	msg := func(id, title string, change func(*Bench, *Call, device.Format, string) string, w Expectation) {
		cs = append(cs, Case{ID: "message." + id, Op: device.SendMessage, Title: "a message " + title, Section: "2.4",
			Contract: "3", Build: OnOp(device.SendMessage, change), Want: w, Tags: []string{"edge"}})
	}
	for _, name := range []string{device.FieldMessageType, device.FieldMessageValue} {
		n := name
		msg(n+".missing", "without "+n, func(_ *Bench, c *Call, _ device.Format, _ string) string {
			c.Drop(n)
			return ""
		}, missingField(n))
	}
	msg("message_value.drawn", "whose message_value is a setting drawn from the run's seed",
		func(e *Bench, c *Call, _ device.Format, id string) string {
			c.Set(device.FieldMessageValue, drawMessageValue(e.Faker(id)))
			return ""
		}, Expectation{OK: true, Status: 200})

	name := func(id, title, contract string, change func(*Bench, *Call, device.Format, string) string, w Expectation) {
		cs = append(cs, Case{ID: "update_name." + id, Op: device.UpdateName, Title: "an update_name " + title, Section: "4.3",
			Contract: contract, Build: OnOp(device.UpdateName, change), Want: w, Tags: []string{"edge"}})
	}
	name("name.missing", "without name", "3", func(_ *Bench, c *Call, _ device.Format, _ string) string {
		c.Drop(device.FieldName)
		return ""
	}, missingField(device.FieldName))
	name("name.drawn", "with a name drawn from the run's seed", "3", func(e *Bench, c *Call, _ device.Format, id string) string {
		c.Set(device.FieldName, drawName(e.Faker(id)))
		return ""
	}, Expectation{OK: true, Status: 200})
	name("name.unicode", "with a name in another script", "3", setTo(device.FieldName, "Küche Licht 台所"),
		Expectation{ContractOK: true, Status: 200})
	// A command that carries one field of its type (CONTRACT 3: at least
	// one; the others keep their value).
	for _, t := range oracle.Types {
		if len(t.Fields) < 2 {
			continue
		}
		first := t.Fields[0].Name
		cs = append(cs, Case{ID: "command." + check.Slug(t.Name) + ".one-field", Op: device.SendCommand, Type: t.Name, Section: "4.1",
			Contract: "3", Title: "a " + t.Name + " command with " + first + " alone", Want: Expectation{ContractOK: true, Status: 200},
			Tags: []string{"form"}, Build: commandOn(t.Name, func(_ *Bench, c *Call, _ device.Format, _ string) string {
				c.Keep(device.FieldSN, device.FieldType, first)
				return ""
			})})
	}
	return append(cs, operationSamples()...)
}

// operationSamples are the cases of the operations' own fields: type and
// format and device_id of send command, message_type and message_value,
// and name.
func operationSamples() []Case {
	var cs []Case
	add := func(op device.Operation, prefix, title, section, contract string, f *oracle.Field, ss []oracle.Sample, skip ...string) {
		for _, s := range ss {
			if oneOf(s.Slug, skip...) {
				continue
			}
			cs = append(cs, fieldSampleCase(op, prefix, title, section, contract, f, s))
		}
	}
	add(device.SendMessage, "message.message_type", "a message whose message_type is", "2.4", "3", &oracle.MessageType,
		samplesOf(&oracle.MessageType, "message"))
	add(device.SendMessage, "message.message_value", "a message whose message_value is", "2.4", "3", &oracle.MessageValue,
		samplesOf(&oracle.MessageValue, oracle.MessageValue.Example))
	// "non-ascii" is the catalog's update_name.name.unicode.
	add(device.UpdateName, "update_name.name", "an update_name with the name", "4.3", "3", &oracle.Name,
		samplesOf(&oracle.Name, oracle.Name.Example), "non-ascii")
	// "unknown-type" is the catalog's command.unknown-type.
	add(device.SendCommand, "command.type", "a command whose type is", "2.3", "2", &oracle.TypeField,
		oracle.TypeField.Broken("Light Dimmer"), "unknown-type")
	add(device.SendCommand, "command.format", "a command whose format argument is", "4", "2", &oracle.FormatField,
		samplesOf(&oracle.FormatField, "json"))
	// device_id in place of sn (CONTRACT 2: an alias of sn), and beside it.
	alias := func(id, title string, keepSN bool) Case {
		return Case{ID: "command.device_id." + id, Op: device.SendCommand, Title: "a command " + title, Section: "2.2", Contract: "2",
			Want: Expectation{ContractOK: true, Status: 200}, Tags: []string{"form"},
			Build: OnOp(device.SendCommand, func(_ *Bench, c *Call, _ device.Format, _ string) string {
				sn := c.Get(device.FieldSN)
				if !keepSN {
					c.Drop(device.FieldSN)
				}
				c.Fields = append(c.Fields, Field{Name: device.FieldDeviceID, Value: sn})
				return ""
			})}
	}
	cs = append(cs, alias("alias", "that names its device by device_id instead of sn", false),
		alias("equal", "that carries both device_id and sn, equal", true))
	for _, s := range samplesOf(&oracle.DeviceID, oracle.DeviceID.Example) {
		c := fieldSampleCase(device.SendCommand, "command.device_id", "a command that names its device by device_id", "2.2", "2",
			&oracle.DeviceID, s)
		build := c.Build
		c.Build = func(e *Bench, f device.Format, id string) (Call, string) {
			k, skip := build(e, f, id)
			if skip == "" {
				k.Drop(device.FieldSN)
			}
			return k, skip
		}
		cs = append(cs, c)
	}
	return cs
}
