package openapi

import (
	"encoding/json"
	"reflect"
)

// example is a sample of t's JSON: every field present, each slice and map
// with one element, each pointer set, so that a reader sees every key; a type
// met again below itself (a recursive one) stops at its zero value.
func example(t reflect.Type) (any, error) {
	v := reflect.New(t).Elem()
	fill(v, map[reflect.Type]bool{})
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

func fill(v reflect.Value, open map[reflect.Type]bool) {
	t := v.Type()
	if open[t] || implements(t, marshalerType, unmarshalerType, textMarshalType, textUnmarshType) {
		return // zero: encoding/json writes it the type's own way
	}
	open[t] = true
	defer delete(open, t)
	switch t.Kind() {
	case reflect.String:
		v.SetString("text")
	case reflect.Pointer:
		if open[t.Elem()] {
			return
		}
		p := reflect.New(t.Elem())
		fill(p.Elem(), open)
		v.Set(p)
	case reflect.Struct:
		for i := range t.NumField() {
			switch f := v.Field(i); {
			case f.CanSet():
				fill(f, open)
			case f.Kind() == reflect.Struct && t.Field(i).Anonymous:
				fill(f, open) // unexported, but its exported fields are promoted
			}
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("bytes"))
			return
		}
		s := reflect.MakeSlice(t, 1, 1)
		fill(s.Index(0), open)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), open)
		}
	case reflect.Map:
		k := reflect.New(t.Key()).Elem()
		fill(k, open)
		e := reflect.New(t.Elem()).Elem()
		fill(e, open)
		m := reflect.MakeMapWithSize(t, 1)
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}
