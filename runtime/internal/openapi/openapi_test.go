package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
)

// The sample tasks cover every kind the schemas describe.

type Address struct {
	Street string  `json:"street"`
	Zip    *string `json:"zip,omitempty"`
}

type Base struct {
	ID     string `json:"id"`
	Secret string `json:"-"`
}

type Node struct {
	Value    int     `json:"value"`
	Children []*Node `json:"children,omitempty"`
	Next     *Node   `json:"next"`
}

type Level uint8

type Everything struct {
	Base
	Name    string             `json:"name"`
	Count   int8               `json:"count"`
	Size    uint16             `json:"size,omitempty"`
	Ratio   float64            // no tag: the key is the Go name
	OK      bool               `json:"ok"`
	When    time.Time          `json:"when"`
	Wait    time.Duration      `json:"wait"`
	Blob    []byte             `json:"blob"`
	Tags    []string           `json:"tags"`
	Pair    [2]int             `json:"pair"`
	Attrs   map[string]Address `json:"attrs"`
	ByID    map[int]string     `json:"by_id"`
	Home    *Address           `json:"home"`
	Tree    Node               `json:"tree"`
	Any     any                `json:"any"`
	Raw     json.RawMessage    `json:"raw"`
	Quoted  int                `json:"quoted,string"`
	Level   Level              `json:"level"`
	Skipped string             `json:"-"`
	//lint:ignore U1000 an unexported field, which encoding/json and the schema skip
	hidden int
}

type EmailArgs struct{ To, Subject string }

// None is the args of a task that takes none, as the runtime's.
type None struct{}

// jobView is what the runtime shows of a job (the Job shape).
type jobView struct {
	ID      string          `json:"id"`
	Task    string          `json:"task"`
	Status  string          `json:"status"`
	Created nullTime        `json:"created_at"`
	Args    json.RawMessage `json:"args"`
	Result  json.RawMessage `json:"result"`
}

// nullTime encodes itself: null when zero.
type nullTime time.Time

func (t nullTime) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(time.Time(t))
}

func sampleTasks() []Task {
	return []Task{
		{Name: "make_everything", Route: "default", Priority: "normal", Doc: "Makes everything.",
			Args: reflect.TypeFor[Everything](), Result: reflect.TypeFor[*Node]()},
		{Name: "send_email", Route: "email", Priority: "high", Args: reflect.TypeFor[EmailArgs]()},
		{Name: "tick", Route: "default", Priority: "low", Args: reflect.TypeFor[None](), Result: reflect.TypeFor[Address]()},
	}
}

// sampleEndpoints are a submission and a job's read, as the api package
// declares them.
func sampleEndpoints() []Endpoint {
	return []Endpoint{
		{Method: "POST", Path: "/api/v1/jobs", ID: "submitJob", Tag: "jobs", Action: true, Body: OneSubmission,
			Responses: []Response{{Status: http.StatusCreated, Desc: "Enqueued.", Type: struct {
				ID string `json:"id"`
			}{}, Location: true}, {Status: http.StatusBadRequest}}},
		{Method: "GET", Path: "/api/v1/jobs/{id}", ID: "getJob", Tag: "jobs", PathParams: []Param{{Name: "id", Desc: "The job's id."}},
			Responses: []Response{{Status: http.StatusOK, Desc: "The job.", Type: jobView{}, Name: "Job"}, {Status: http.StatusNotFound}}},
	}
}

// answering is an endpoint GET path answering a body of v's type, named name.
func answering(path string, v any, list bool, name string) Endpoint {
	return Endpoint{Method: "GET", Path: path, ID: "get", Tag: "test",
		Responses: []Response{{Status: http.StatusOK, Desc: "It.", Type: v, List: list, Name: name}}}
}

func sampleOptions() Options {
	return Options{
		Title: "test", Version: "1",
		Endpoints: sampleEndpoints(),
		Custom: map[reflect.Type]map[string]any{
			reflect.TypeFor[nullTime](): {"type": []any{"string", "null"}, "format": "date-time"},
		},
	}
}

func document(t *testing.T, tasks []Task, o Options) []byte {
	t.Helper()
	doc, err := Document(tasks, o)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func newValidator(t *testing.T, doc []byte) validator.Validator {
	t.Helper()
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return v
}

func describeErrs(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "%s: %s\n", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "  %s at %s (%s)\n", f.Reason, f.FieldPath, f.KeywordLocation)
		}
	}
	return b.String()
}

func submit(t *testing.T, v validator.Validator, body string) (bool, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "/api/v1/jobs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer token")
	ok, errs := v.ValidateHttpRequestSync(req)
	return ok, describeErrs(errs)
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc := document(t, sampleTasks(), sampleOptions())
	var head struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(doc, &head); err != nil || head.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, %v; want 3.1.0", head.OpenAPI, err)
	}
	if ok, errs := newValidator(t, doc).ValidateDocument(); !ok {
		t.Fatalf("the document is not valid OpenAPI 3.1:\n%s", describeErrs(errs))
	}
}

func TestDocumentWithoutTasksOrEndpointsIsValid(t *testing.T) {
	doc := document(t, nil, Options{})
	if ok, errs := newValidator(t, doc).ValidateDocument(); !ok {
		t.Fatalf("the document is not valid OpenAPI 3.1:\n%s", describeErrs(errs))
	}
}

const fullEverything = `{
	"id": "e1", "name": "n", "count": -128, "size": 65535, "Ratio": 0.5, "ok": true,
	"when": "2026-11-23T10:00:00Z", "wait": 1500000000, "blob": "aGVsbG8=",
	"tags": ["a", "b"], "pair": [1, 2],
	"attrs": {"home": {"street": "Main", "zip": "1000"}, "work": {"street": "Side", "zip": null}},
	"by_id": {"7": "seven", "-1": "minus one"},
	"home": null,
	"tree": {"value": 1, "children": [{"value": 2, "next": null}], "next": {"value": 3}},
	"any": [1, "two", {"three": 3}], "raw": {"whatever": true},
	"quoted": "42", "level": 255
}`

func TestSubmissionFollowingTheArgsSchemaIsAccepted(t *testing.T) {
	v := newValidator(t, document(t, sampleTasks(), sampleOptions()))
	for name, body := range map[string]string{
		"every kind":           `{"name": "make_everything", "args": ` + fullEverything + `}`,
		"missing keys":         `{"name": "make_everything", "args": {"name": "only"}}`,
		"empty args":           `{"name": "make_everything", "args": {}}`,
		"nil slices and maps":  `{"name": "make_everything", "args": {"tags": null, "attrs": null, "blob": null}}`,
		"with every option":    `{"name": "send_email", "args": {"To": "a@b", "Subject": "hi"}, "route": "slow", "priority": "low", "delay": "1h30m"}`,
		"fractional delay":     `{"name": "send_email", "args": {"To": "a@b"}, "delay": "1.5s"}`,
		"go names as json key": `{"name": "send_email", "args": {"To": "a@b", "Subject": "hi"}}`,
		"a task without args":  `{"name": "tick", "args": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if ok, errs := submit(t, v, body); !ok {
				t.Fatalf("refused:\n%s", errs)
			}
		})
	}
}

// What the schema accepts, the server's decoder accepts too: the args of
// each valid submission decode into the Go type with unknown keys refused.
func TestAcceptedArgsDecodeStrictly(t *testing.T) {
	for _, c := range []struct {
		args string
		into any
	}{
		{fullEverything, new(Everything)},
		{`{"To": "a@b", "Subject": "hi"}`, new(EmailArgs)},
	} {
		dec := json.NewDecoder(strings.NewReader(c.args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(c.into); err != nil {
			t.Errorf("%T refuses what its schema accepts: %v", c.into, err)
		}
	}
}

func TestEachTaskExampleIsAValidSubmission(t *testing.T) {
	doc := document(t, sampleTasks(), sampleOptions())
	var d struct {
		Paths map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct {
						Examples map[string]struct {
							Value json.RawMessage `json:"value"`
						} `json:"examples"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	examples := d.Paths["/api/v1/jobs"].Post.RequestBody.Content["application/json"].Examples
	if len(examples) != len(sampleTasks()) {
		t.Fatalf("%d examples, want one per task: %v", len(examples), examples)
	}
	v := newValidator(t, doc)
	for name, ex := range examples {
		if ok, errs := submit(t, v, string(ex.Value)); !ok {
			t.Errorf("example of %s is refused:\n%s\n%s", name, ex.Value, errs)
		}
	}
	var ex bytes.Buffer
	if err := json.Compact(&ex, examples["make_everything"].Value); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"attrs":{"text":{"street":"text","zip":"text"}}`, `"by_id":{"0":"text"}`, `"tags":["text"]`} {
		if !strings.Contains(ex.String(), want) {
			t.Errorf("the example does not show %s: %s", want, ex.String())
		}
	}
}

func TestSubmissionIsRefusedNamingTheField(t *testing.T) {
	v := newValidator(t, document(t, sampleTasks(), sampleOptions()))
	for name, c := range map[string]struct{ body, field string }{
		"unknown key":              {`{"name": "make_everything", "args": {"nmae": "x"}}`, "nmae"},
		"key in the wrong case":    {`{"name": "make_everything", "args": {"Name": "x"}}`, "Name"},
		"go name of a tagged key":  {`{"name": "make_everything", "args": {"Count": 1}}`, "Count"},
		"key of a skipped field":   {`{"name": "make_everything", "args": {"Skipped": "x"}}`, "Skipped"},
		"key of unexported field":  {`{"name": "make_everything", "args": {"hidden": 1}}`, "hidden"},
		"wrong type":               {`{"name": "make_everything", "args": {"count": "many"}}`, "count"},
		"int8 out of range":        {`{"name": "make_everything", "args": {"count": 128}}`, "count"},
		"negative unsigned":        {`{"name": "make_everything", "args": {"size": -1}}`, "size"},
		"fraction for an integer":  {`{"name": "make_everything", "args": {"wait": 1.5}}`, "wait"},
		"time not a date-time":     {`{"name": "make_everything", "args": {"when": 5}}`, "when"},
		"array of the wrong size":  {`{"name": "make_everything", "args": {"pair": [1, 2, 3]}}`, "pair"},
		"unknown key in map value": {`{"name": "make_everything", "args": {"attrs": {"home": {"strete": "x"}}}}`, "strete"},
		"map key not an integer":   {`{"name": "make_everything", "args": {"by_id": {"seven": "7"}}}`, "by_id"},
		"unknown key deep in tree": {`{"name": "make_everything", "args": {"tree": {"next": {"next": {"vaule": 1}}}}}`, "vaule"},
		"null for a non-pointer":   {`{"name": "make_everything", "args": {"tree": null}}`, "tree"},
		"quoted field not quoted":  {`{"name": "make_everything", "args": {"quoted": 42}}`, "quoted"},
		"wrong case of email key":  {`{"name": "send_email", "args": {"to": "a@b"}}`, "to"},
		"no args":                  {`{"name": "send_email"}`, "args"},
		"unknown task":             {`{"name": "send_mail", "args": {}}`, "name"},
		"unknown submission key":   {`{"name": "send_email", "args": {}, "prio": "high"}`, "prio"},
		"priority not in the enum": {`{"name": "send_email", "args": {}, "priority": "urgent"}`, "priority"},
		"delay not a duration":     {`{"name": "send_email", "args": {}, "delay": "10 seconds"}`, "delay"},
	} {
		t.Run(name, func(t *testing.T) {
			ok, errs := submit(t, v, c.body)
			refusedNaming(t, ok, errs, c.body, c.field)
		})
	}
}

// refusedNaming fails t unless the validator refused body with errors that
// name field.
func refusedNaming(t *testing.T, ok bool, errs, body, field string) {
	t.Helper()
	if ok {
		t.Fatalf("accepted %s", body)
	}
	if !names(errs, field) {
		t.Fatalf("refused without naming %q:\n%s", field, errs)
	}
}

// names reports whether the validator's errors name field: as a key they
// quote, or as a step of the path of the value or of the schema keyword.
func names(errs, field string) bool {
	for _, form := range []string{"'" + field + "'", "." + field + " ", "/" + field + "/"} {
		if strings.Contains(errs, form) {
			return true
		}
	}
	return false
}

func jobResponse(t *testing.T, v validator.Validator, body string) (bool, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "/api/v1/jobs/j1", nil)
	req.Header.Set("Authorization", "Bearer token")
	res := &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}
	ok, errs := v.ValidateHttpResponse(req, res)
	return ok, describeErrs(errs)
}

func TestJobIsTypedByItsTask(t *testing.T) {
	v := newValidator(t, document(t, sampleTasks(), sampleOptions()))
	for name, body := range map[string]string{
		"completed with a result": `{"id": "j1", "task": "make_everything", "status": "completed", "created_at": "2026-11-23T10:00:00Z",
			"args": {"name": "n"}, "result": {"value": 1, "next": {"value": 2, "next": null}}}`,
		"pending, result null":      `{"id": "j1", "task": "make_everything", "status": "pending", "created_at": null, "args": {"name": "n"}, "result": null}`,
		"a task without result":     `{"id": "j1", "task": "send_email", "status": "completed", "created_at": null, "args": {"To": "a"}, "result": null}`,
		"a named result type":       `{"id": "j1", "task": "tick", "status": "completed", "created_at": null, "args": {}, "result": {"street": "Main"}}`,
		"another program's task":    `{"id": "j1", "task": "elsewhere", "status": "completed", "created_at": null, "args": null, "result": null}`,
		"args that did not decode":  `{"id": "j1", "task": "send_email", "status": "failed", "created_at": null, "args": null, "result": null}`,
		"custom schema of nullTime": `{"id": "j1", "task": "send_email", "status": "failed", "created_at": "2026-11-23T10:00:00.5Z", "args": null, "result": null}`,
	} {
		t.Run(name, func(t *testing.T) {
			if ok, errs := jobResponse(t, v, body); !ok {
				t.Fatalf("refused %s:\n%s", body, errs)
			}
		})
	}
	for name, c := range map[string]struct{ body, field string }{
		"result of the wrong type": {`{"id": "j1", "task": "make_everything", "status": "completed", "created_at": null, "args": null, "result": {"value": "one"}}`, "value"},
		"another task's args":      {`{"id": "j1", "task": "send_email", "status": "completed", "created_at": null, "args": {"name": "n"}, "result": null}`, "name"},
		"args for a task of none":  {`{"id": "j1", "task": "tick", "status": "completed", "created_at": null, "args": {"n": 1}, "result": null}`, "n"},
		"a named result, wrong":    {`{"id": "j1", "task": "tick", "status": "completed", "created_at": null, "args": {}, "result": {"street": 1}}`, "street"},
		"a result for no result":   {`{"id": "j1", "task": "send_email", "status": "completed", "created_at": null, "args": null, "result": {"value": 1}}`, "result"},
		// An answer's keys that encoding/json always writes are required.
		"a key always written, missing": {`{"id": "j1", "task": "tick", "created_at": null, "args": {}, "result": null}`, "status"},
	} {
		t.Run(name, func(t *testing.T) {
			ok, errs := jobResponse(t, v, c.body)
			refusedNaming(t, ok, errs, c.body, c.field)
		})
	}
}

func schemaJSON(t *testing.T, typ reflect.Type) string {
	t.Helper()
	s, err := Schema(typ)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSchemaOfEachKind(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[string](), `{"type":"string"}`},
		{reflect.TypeFor[bool](), `{"type":"boolean"}`},
		{reflect.TypeFor[int8](), `{"maximum":127,"minimum":-128,"type":"integer"}`},
		{reflect.TypeFor[int64](), `{"format":"int64","maximum":9223372036854775807,"minimum":-9223372036854775808,"type":"integer"}`},
		{reflect.TypeFor[uint16](), `{"maximum":65535,"minimum":0,"type":"integer"}`},
		{reflect.TypeFor[uint64](), `{"maximum":18446744073709551615,"minimum":0,"type":"integer"}`},
		{reflect.TypeFor[float32](), `{"format":"float","type":"number"}`},
		{reflect.TypeFor[time.Time](), `{"format":"date-time","type":"string"}`},
		{reflect.TypeFor[*time.Time](), `{"format":"date-time","type":["string","null"]}`},
		{reflect.TypeFor[[]byte](), `{"contentEncoding":"base64","type":["string","null"]}`},
		{reflect.TypeFor[[3]byte](), `{"items":{"maximum":255,"minimum":0,"type":"integer"},"maxItems":3,"minItems":3,"type":"array"}`},
		{reflect.TypeFor[[]string](), `{"items":{"type":"string"},"type":["array","null"]}`},
		{reflect.TypeFor[map[string]bool](), `{"additionalProperties":{"type":"boolean"},"type":["object","null"]}`},
		{reflect.TypeFor[map[uint]bool](), `{"additionalProperties":{"type":"boolean"},"propertyNames":{"pattern":"^[0-9]+$"},"type":["object","null"]}`},
		{reflect.TypeFor[any](), `{"description":"Any JSON value."}`},
		{reflect.TypeFor[json.RawMessage](), `{"description":"Any JSON value."}`},
		{reflect.TypeFor[struct {
			A int `json:"a,omitempty"`
			B string
			C string `json:"-"`
			//lint:ignore SA5008 the key "-", which encoding/json gives this tag
			D string `json:"-,"`
			e string
		}](), `{"additionalProperties":false,"properties":{"-":{"type":"string"},"B":{"type":"string"},"a":{"format":"int64","maximum":9223372036854775807,"minimum":-9223372036854775808,"type":"integer"}},"type":"object"}`},
	} {
		if got := schemaJSON(t, c.typ); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.typ, got, c.want)
		}
	}
}

func TestDurationIsIntegerNanoseconds(t *testing.T) {
	got := schemaJSON(t, reflect.TypeFor[time.Duration]())
	if !strings.Contains(got, `"type":"integer"`) || !strings.Contains(got, "nanoseconds") {
		t.Errorf("time.Duration: %s", got)
	}
}

func TestTypeThatEncodesItselfIsAnyJSONWithADescription(t *testing.T) {
	got := schemaJSON(t, reflect.TypeFor[nullTime]())
	if !strings.Contains(got, "json.Marshaler") || strings.Contains(got, `"type"`) {
		t.Errorf("nullTime: %s", got)
	}
}

func TestTextMarshalerIsAString(t *testing.T) {
	got := schemaJSON(t, reflect.TypeFor[map[textKey]int]())
	if !strings.Contains(got, `"type":["object","null"]`) || !strings.Contains(got, "propertyNames") {
		t.Errorf("map[textKey]int: %s", got)
	}
	if got := schemaJSON(t, reflect.TypeFor[textKey]()); !strings.HasPrefix(got, `{"description":"The text form of openapi.textKey."`) || !strings.Contains(got, `"type":"string"`) {
		t.Errorf("textKey: %s", got)
	}
}

type textKey struct{ a, b int }

func (k textKey) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "%d-%d", k.a, k.b), nil }

type Inner struct {
	Deep string `json:"deep"`
}

type Shadow struct {
	Inner        // deep promoted
	Deep  string `json:"deep_own"`
}

type Left struct{ Same, OnlyLeft string }
type Right struct{ Same, OnlyRight string }

type Ambiguous struct {
	Left
	Right // Same is at the same depth in both, untagged: encoding/json drops it
}

type Dominant struct {
	Left
	Right
	Same int // shallower: wins
}

func TestEmbeddedStructsAreFlattenedLikeEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		v    any
		keys []string
	}{
		{Everything{}, []string{"id", "name", "Ratio"}},
		{Shadow{}, []string{"deep", "deep_own"}},
		{Ambiguous{}, []string{"OnlyLeft", "OnlyRight"}},
		{Dominant{}, []string{"OnlyLeft", "OnlyRight", "Same"}},
	} {
		typ := reflect.TypeOf(c.v)
		s, err := Schema(typ)
		if err != nil {
			t.Fatal(err)
		}
		props := s["$defs"].(map[string]any)[typ.Name()].(map[string]any)["properties"].(map[string]any)
		for _, k := range c.keys {
			if props[k] == nil {
				t.Errorf("%s: no key %q in %v", typ, k, props)
			}
		}
		// What encoding/json writes for the type has exactly the keys of
		// the schema.
		b, _ := json.Marshal(c.v)
		var written map[string]any
		_ = json.Unmarshal(b, &written)
		for k := range written {
			if props[k] == nil {
				t.Errorf("%s: encoding/json writes %q, the schema has no such key", typ, k)
			}
		}
		for k := range props {
			if _, ok := written[k]; !ok && !strings.Contains(string(b), `"`+k+`"`) && k != "size" {
				t.Errorf("%s: the schema has %q, encoding/json does not write it: %s", typ, k, b)
			}
		}
	}
}

func TestRecursiveTypeRefersToItself(t *testing.T) {
	got := schemaJSON(t, reflect.TypeFor[Node]())
	for _, want := range []string{`"$ref":"#/$defs/Node"`, `"children":{"items":{"anyOf":[{"$ref":"#/$defs/Node"},{"type":"null"}]}`} {
		if !strings.Contains(got, want) {
			t.Errorf("Node: want %s in %s", want, got)
		}
	}
}

type BadChan struct {
	Inner struct {
		Ch chan int `json:"ch"`
	} `json:"inner"`
}

type BadFunc struct {
	List []struct{ F func() } `json:"list"`
}

type BadComplex struct {
	M map[string]*complex128 `json:"m"`
}

type BadKey struct {
	M map[[2]int]string `json:"m"`
}

func TestUnsupportedKindIsAnErrorNamingThePath(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[BadChan](), "openapi.BadChan.inner.ch: type chan int"},
		{reflect.TypeFor[BadFunc](), "openapi.BadFunc.list[].F: type func()"},
		{reflect.TypeFor[BadComplex](), "openapi.BadComplex.m[key]: type complex128"},
		{reflect.TypeFor[BadKey](), "openapi.BadKey.m: map key type [2]int"},
	} {
		_, err := Schema(c.typ)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to say %q", c.typ, err, c.want)
		}
	}
	_, err := Document([]Task{{Name: "bad", Args: reflect.TypeFor[BadChan]()}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "task bad: args openapi.BadChan.inner.ch") {
		t.Errorf("Document: err = %v, want it to name the task and the path", err)
	}
}

func TestDocumentIsByteForByteDeterministic(t *testing.T) {
	want := document(t, sampleTasks(), sampleOptions())
	for range 20 {
		tasks := sampleTasks()
		rand.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
		if got := document(t, tasks, sampleOptions()); !bytes.Equal(got, want) {
			t.Fatal("two documents of the same tasks differ")
		}
	}
}

type Cookie struct {
	Flavor string `json:"flavor"`
}

func localArgs() reflect.Type {
	type Cookie struct{ Crumbs int }
	return reflect.TypeFor[Cookie]()
}

func TestTypesOfOneNameGetDistinctComponentNames(t *testing.T) {
	tasks := []Task{
		{Name: "bake", Args: reflect.TypeFor[Cookie](), Result: reflect.TypeFor[http.Cookie]()},
		{Name: "crumble", Args: localArgs()},
		{Name: "store", Args: reflect.TypeFor[EmailArgs](), Result: reflect.TypeFor[Cookie]()},
	}
	doc := document(t, tasks, Options{})
	var d struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]string{"OpenapiCookie": `"flavor"`, "HttpCookie": `"HttpOnly"`, "OpenapiCookie2": `"Crumbs"`} {
		if !strings.Contains(string(d.Components.Schemas[name]), key) {
			t.Errorf("component %s: %s, want the type with key %s", name, d.Components.Schemas[name], key)
		}
	}
	if _, ok := d.Components.Schemas["Cookie"]; ok {
		t.Error("an unqualified Cookie component, though three types have that name")
	}
	if ok, errs := newValidator(t, doc).ValidateDocument(); !ok {
		t.Fatalf("invalid:\n%s", describeErrs(errs))
	}
}

func TestTaskNamesAreUniqueAndPresent(t *testing.T) {
	args := reflect.TypeFor[EmailArgs]()
	for _, tasks := range [][]Task{
		{{Name: "a", Args: args}, {Name: "a", Args: args}},
		{{Name: "", Args: args}},
		{{Name: "a"}},
	} {
		if _, err := Document(tasks, Options{}); err == nil {
			t.Errorf("Document(%v) gave no error", tasks)
		}
	}
}

func TestAnswerCannotTakeTheDocumentsOwnComponentNames(t *testing.T) {
	_, err := Document(nil, Options{Endpoints: []Endpoint{answering("/x", EmailArgs{}, false, "Submission")}})
	if err == nil {
		t.Error("an answer named Submission was taken")
	}
}

type cronEntry struct {
	Name    string   `json:"name"`
	NextRun nullTime `json:"next_run"`
}

func TestListingAnswersAnArrayOfItsElementShape(t *testing.T) {
	o := sampleOptions()
	o.Endpoints = append(o.Endpoints, answering("/api/v1/cron", cronEntry{}, true, "CronEntry"))
	v := newValidator(t, document(t, sampleTasks(), o))
	respond := func(body string) (bool, string) {
		req, _ := http.NewRequest(http.MethodGet, "/api/v1/cron", nil)
		req.Header.Set("Authorization", "Bearer token")
		res := &http.Response{StatusCode: http.StatusOK, Request: req,
			Header: http.Header{"Content-Type": []string{"application/json"}},
			Body:   io.NopCloser(strings.NewReader(body))}
		ok, errs := v.ValidateHttpResponse(req, res)
		return ok, describeErrs(errs)
	}
	if ok, errs := respond(`[{"name": "nightly", "next_run": "2026-11-24T00:00:00Z"}, {"name": "off", "next_run": null}]`); !ok {
		t.Fatalf("refused:\n%s", errs)
	}
	body := `[{"name": "nightly", "nextRun": null}]`
	ok, errs := respond(body)
	refusedNaming(t, ok, errs, body, "nextRun")
}

type lineItemJSON struct {
	SKU string `json:"sku"`
}

type orderJSON struct {
	Items []lineItemJSON `json:"items"`
}

// A Go type that only shapes JSON (unexported, named with a JSON suffix)
// is a component under the name a reader knows: PascalCase, no suffix; an
// answer's name that is not such a name is refused, naming the one to use.
func TestComponentNamesArePascalCaseWithoutAJSONSuffix(t *testing.T) {
	doc := document(t, []Task{{Name: "order", Args: reflect.TypeFor[orderJSON]()}}, Options{})
	var d struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Order", "LineItem"} {
		if _, ok := d.Components.Schemas[want]; !ok {
			t.Errorf("no component %s; the document has %v", want, slices.Sorted(maps.Keys(d.Components.Schemas)))
		}
	}
	for _, key := range []string{"jobPage", "JobPageJSON", "Job.Page"} {
		_, err := Document(nil, Options{Endpoints: []Endpoint{answering("/x", orderJSON{}, false, key)}})
		if err == nil || !strings.Contains(err.Error(), "PascalCase") {
			t.Errorf("answer %q: err = %v; want it refused as not PascalCase", key, err)
		}
	}
}

type otherView struct {
	N int `json:"n"`
}

// The table is checked as it is described: a path parameter the path does
// not have, an operation declared twice, one name for two types, an error
// status without a shape of its own are refused, naming what is wrong.
func TestEndpointTableIsCheckedWhenDescribed(t *testing.T) {
	job := sampleEndpoints()[1]
	noParams := job
	noParams.PathParams = nil
	teapot := answering("/tea", jobView{}, false, "")
	teapot.Responses = append(teapot.Responses, Response{Status: http.StatusTeapot})
	for name, c := range map[string]struct {
		eps  []Endpoint
		want string
	}{
		"path parameter missing": {[]Endpoint{noParams}, "path parameters"},
		"declared twice":         {[]Endpoint{job, job}, "declared twice"},
		"one name, two types": {[]Endpoint{answering("/a", jobView{}, false, "View"), answering("/b", otherView{}, false, "View")},
			"two types"},
		"error status unknown": {[]Endpoint{teapot}, "418"},
		"inner key missing": {[]Endpoint{{Method: "GET", Path: "/c", Responses: []Response{
			{Status: 200, Type: jobView{}, Name: "Job", Inner: map[string]string{"nope": "Nope"}}}}}, "nope"},
	} {
		if _, err := Document(nil, Options{Endpoints: c.eps}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to say %q", name, err, c.want)
		}
	}
}

// A name given to a type twice makes the second an alias of the first; a
// name for a type its answer holds names that type's component.
func TestAnswerNamesAreComponentNames(t *testing.T) {
	o := sampleOptions()
	o.Endpoints = append(o.Endpoints, answering("/view", jobView{}, false, "JobAlias"),
		Endpoint{Method: "GET", Path: "/order", Responses: []Response{{Status: 200, Desc: "An order.", Type: orderJSON{}, Name: "Order",
			Inner: map[string]string{"items": "Item"}}}})
	var d struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(document(t, sampleTasks(), o), &d); err != nil {
		t.Fatal(err)
	}
	if got := string(d.Components.Schemas["JobAlias"]); !strings.Contains(got, `"#/components/schemas/Job"`) {
		t.Errorf("JobAlias: %s, want a $ref to Job", got)
	}
	if got := string(d.Components.Schemas["Item"]); !strings.Contains(got, `"sku"`) {
		t.Errorf("Item: %s, want lineItemJSON's schema", got)
	}
	if _, ok := d.Components.Schemas["LineItem"]; ok {
		t.Error("lineItemJSON has its Go name too")
	}
}

// A filter's enum has no default (its absence means any value), a time is a
// date-time, and a family of parameters named by a prefix is said in the
// operation's description, never declared as one parameter.
func TestQueryParametersOfASearch(t *testing.T) {
	raw, err := Document(nil, Options{Endpoints: []Endpoint{{Method: "GET", Path: "/s", ID: "s", Tag: "t", Summary: "Search.",
		Query: []Param{
			{Name: "status", Desc: "Status.", Enum: []string{"a", "b"}, NoDefault: true},
			{Name: "since", Desc: "Since.", Kind: DateTime},
			{Name: "args.", Desc: "It also takes args.<field>=value.", Prefix: true},
		},
		Responses: []Response{{Status: 200, Desc: "OK.", Type: struct{}{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Description string `json:"description"`
			Parameters  []struct {
				Name   string         `json:"name"`
				Schema map[string]any `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/s"]["get"]
	if op.Description != "It also takes args.<field>=value." || len(op.Parameters) != 2 {
		t.Fatalf("operation = %+v; want the prefix in its description and two parameters", op)
	}
	if s := op.Parameters[0].Schema; s["default"] != nil || len(s["enum"].([]any)) != 2 {
		t.Errorf("status schema = %v; want its enum without a default", s)
	}
	if s := op.Parameters[1].Schema; s["type"] != "string" || s["format"] != "date-time" {
		t.Errorf("since schema = %v; want a date-time string", s)
	}
}
