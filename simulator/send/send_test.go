package send

import (
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

func TestFieldsNamedForFormat(t *testing.T) {
	for _, tc := range []struct {
		format device.Format
		given  string
		want   string
	}{
		{device.JSON, "cooling_point", "cooling point"},
		{device.JSON, "cooling point", "cooling point"},
		{device.XML, "cooling point", "cooling_point"},
		{device.XML, "cooling_point", "cooling_point"},
	} {
		r := Request{Op: device.SendCommand, Format: tc.format, Type: "Thermostat", SN: "x", Settings: []Setting{{tc.given, "22"}}}
		f := r.fields()
		if len(f) != 3 || f[2].Key != tc.want || f[0].Key != device.FieldSN || f[1].Value != "Thermostat" {
			t.Errorf("%s %q: %+v", tc.format, tc.given, f)
		}
	}
	// An unknown field is sent as written: the target judges it.
	r := Request{Op: device.SendCommand, Format: device.XML, Type: "Light Dimmer", SN: "x", Settings: []Setting{{"colour", "red"}}}
	if f := r.fields(); f[2].Key != "colour" {
		t.Errorf("unknown field renamed: %+v", f)
	}
}

func TestParseSettingAndCheck(t *testing.T) {
	if s, err := ParseSetting("name=a=b"); err != nil || s.Name != "name" || s.Value != "a=b" {
		t.Errorf("%+v %v", s, err)
	}
	for _, bad := range []string{"dimming", "=4", " =4"} {
		if _, err := ParseSetting(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	ok := Request{Op: device.SendMessage, Format: device.JSON, MessageType: "message", MessageValue: "a=1"}
	if err := ok.Check(); err != nil {
		t.Error(err)
	}
	for _, bad := range []Request{
		{Op: device.SendMessage, Format: device.JSON, MessageType: "message"},
		{Op: device.SendCommand, Format: device.JSON, Type: "Light Dimmer", SN: "x"},
		{Op: device.SendCommand, Format: device.JSON, SN: "x", Settings: []Setting{{"dimming", "1"}}},
		{Op: device.UpdateName, Format: device.JSON, SN: "x"},
		{Op: device.UpdateName, SN: "x", Name: "y"},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
