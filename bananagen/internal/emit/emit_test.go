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

// A keyed, limited task renders gofmt-clean and identically each time, and
// a task without flow control keys gets neither call.
func TestFile_FlowControlCalls(t *testing.T) {
	t.Parallel()
	args := &model.Type{Kind: model.Pointer, Elem: &model.Type{Kind: model.Named, Path: "example.com/shop", Name: "Order"}}
	p := model.Package{Name: "shop", Path: "example.com/shop", Tasks: []model.Task{{
		Func: "charge", Stub: "Charge", Name: "charge", Args: args, Directive: "//bananas:task key=Shop.Owner max_running=1 rate=100/s burst=10",
		MaxRunning: 1, Rate: "100/s", Burst: 10,
		Key: &model.Key{Path: "Shop.Owner", ArgsPointer: true, Leaf: model.KeyUint, Hops: []model.KeyHop{{Name: "Shop", Pointer: true}, {Name: "Owner"}}},
	}, {Func: "plain", Stub: "Plain", Name: "plain", Args: args, Directive: "//bananas:task"}}}
	a, err := File(p)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := File(p); !bytes.Equal(a, b) {
		t.Fatal("two renders of one model differ")
	}
	if formatted, err := format.Source(a); err != nil || !bytes.Equal(formatted, a) {
		t.Fatalf("output is not gofmt-clean (%v):\n%s", err, a)
	}
	for _, want := range []string{
		`Limit(runtime.TaskLimits{MaxRunning: 1, Rate: "100/s", Burst: 10})`,
		`KeyBy(func(a *Order) string {`,
		`if a.Shop == nil {`,
		`return strconv.FormatUint(uint64(a.Shop.Owner), 10)`,
		`}).DescribeKey("Shop.Owner")`,
	} {
		if !strings.Contains(string(a), want) {
			t.Errorf("output lacks %q:\n%s", want, a)
		}
	}
	if n := strings.Count(string(a), "KeyBy("); n != 1 {
		t.Errorf("%d KeyBy calls; want one, for the keyed task only", n)
	}
}
