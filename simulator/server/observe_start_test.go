package server

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestObservationStartSetsEveryField: a pooled observation that a request
// left full (every field of its tee and capture set) is, once start has
// run for the next request, exactly a fresh one for that request. A field
// added to teeBody or captureWriter and not to start fails here.
func TestObservationStartSetsEveryField(t *testing.T) {
	used := &observation{}
	for _, v := range []reflect.Value{reflect.ValueOf(&used.body).Elem(), reflect.ValueOf(&used.cw).Elem()} {
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.CanSet() {
				f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem()
			}
			fillNonZero(t, f, v.Type().Field(i).Name)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
	w := httptest.NewRecorder()
	at := time.Unix(1700000000, 0)
	used.start(w, r, at, 4096)
	want := observation{body: teeBody{ReadCloser: r.Body, buf: used.body.buf[:0], max: 4096},
		cw: captureWriter{ResponseWriter: w, keepPairs: true, buf: used.cw.buf[:0], start: at}}
	if !reflect.DeepEqual(used.body, want.body) || !reflect.DeepEqual(used.cw, want.cw) {
		t.Errorf("after start:\n%+v\n%+v\nwant\n%+v\n%+v", used.body, used.cw, want.body, want.cw)
	}
}

// fillNonZero sets f to a value other than its zero value.
func fillNonZero(t *testing.T, f reflect.Value, name string) {
	t.Helper()
	switch f.Kind() {
	case reflect.Int, reflect.Int64:
		f.SetInt(7)
	case reflect.Uint8, reflect.Uint64:
		f.SetUint(3)
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Slice:
		f.Set(reflect.MakeSlice(f.Type(), 1, 8))
	case reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
	case reflect.Interface:
		switch f.Type() {
		case reflect.TypeOf((*http.ResponseWriter)(nil)).Elem():
			f.Set(reflect.ValueOf(httptest.NewRecorder()))
		default:
			f.Set(reflect.ValueOf(http.NoBody))
		}
	case reflect.Struct:
		if f.Type() != reflect.TypeOf(time.Time{}) {
			t.Fatalf("field %s: %s, which this test cannot fill", name, f.Type())
		}
		f.Set(reflect.ValueOf(time.Unix(1, 0)))
	default:
		t.Fatalf("field %s: %s, which this test cannot fill", name, f.Kind())
	}
}
