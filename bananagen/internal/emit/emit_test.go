package emit

import (
	"bytes"
	"go/format"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananagen/internal/model"
)

// The emitter is tested from model values alone: no go/ast, no loading.
func TestFile_FromModelValues(t *testing.T) {
	t.Parallel()
	p := model.Package{Name: "shop", Path: "example.com/shop", Tasks: []model.Task{{
		Func: "charge", Stub: "Charge", Name: "charge", Route: "billing", Retries: 0, HasRetries: true,
		Timeout: 90 * time.Second, Directive: "//bananas:task route=billing retries=0 timeout=90s",
		Args:   &model.Type{Kind: model.Map, Key: &model.Type{Kind: model.Named, Name: "string"}, Elem: &model.Type{Kind: model.Slice, Elem: &model.Type{Kind: model.Named, Path: "time", Name: "Time"}}},
		Result: &model.Type{Kind: model.Pointer, Elem: &model.Type{Kind: model.Named, Path: "example.com/shop", Name: "Receipt"}},
	}}}
	a, err := File(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := File(p)
	if !bytes.Equal(a, b) {
		t.Fatal("two renders of one model differ")
	}
	if formatted, err := format.Source(a); err != nil || !bytes.Equal(formatted, a) {
		t.Fatalf("output is not gofmt-clean (%v):\n%s", err, a)
	}
	for _, want := range []string{
		"// " + Header,
		`runtime.NewTask[map[string][]time.Time, *Receipt](`,
		`runtime.MaxRetries(0)`,
		`runtime.Timeout(90*time.Second)`,
		`runtime.Handle(w, Charge, charge)`,
		`func decodeChargeArgs(data []byte) (map[string][]time.Time, error)`,
	} {
		if !strings.Contains(string(a), want) {
			t.Errorf("output lacks %q:\n%s", want, a)
		}
	}
}
