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

// A batch task's stub enqueues one job of the slice's element type; its
// registration is runtime.HandleBatch with the function adapted to the
// runtime's one shape, whichever of the three it returns.
func TestFile_BatchTaskRegistersHandleBatch(t *testing.T) {
	t.Parallel()
	ev := &model.Type{Kind: model.Named, Path: "example.com/ev", Name: "Event"}
	p := model.Package{Name: "ev", Path: "example.com/ev", Tasks: []model.Task{
		{Func: "index", Stub: "Index", Name: "index", Batch: 500, Linger: 200 * time.Millisecond, BatchShape: model.BatchErrors, Args: ev, Directive: "//bananas:task batch=500 linger=200ms"},
		{Func: "push", Stub: "Push", Name: "push", Batch: 10, Linger: time.Second, BatchShape: model.BatchError, Args: ev, Directive: "//bananas:task batch=10 linger=1s"},
		{Func: "score", Stub: "Score", Name: "score", Batch: 2, Linger: time.Millisecond, BatchShape: model.BatchResults, Args: ev, Result: &model.Type{Kind: model.Named, Name: "int"}, Directive: "//bananas:task batch=2 linger=1ms"},
	}}
	out, err := File(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`var Index *runtime.Task[Event, runtime.None]`,
		`runtime.HandleBatch(w, Index, runtime.Batch{Size: 500, Linger: 200 * time.Millisecond}, func(ctx context.Context, args []Event) ([]runtime.None, []error, error) {`,
		`return nil, index(ctx, args), nil`,
		`return nil, nil, push(ctx, args)`,
		`results, errs := score(ctx, args)`,
		`func(ctx context.Context, args []Event) ([]int, []error, error)`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "runtime.Handle(w") {
		t.Errorf("a batch task registered with Handle:\n%s", out)
	}
}
