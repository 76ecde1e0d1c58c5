package ext

import (
	"sync"
	"sync/atomic"
	"testing"
)

type keyA struct{}
type keyB struct{}

func TestGetMakesOnce(t *testing.T) {
	var r Registry
	var made atomic.Int32
	var wg sync.WaitGroup
	got := make([]*int, 16)
	for i := range got {
		wg.Go(func() {
			got[i] = Get(&r, keyA{}, func() *int { made.Add(1); return new(int) })
		})
	}
	wg.Wait()
	if n := made.Load(); n != 1 {
		t.Fatalf("made %d times, want 1", n)
	}
	for i, p := range got {
		if p != got[0] {
			t.Fatalf("call %d got another value", i)
		}
	}
}

func TestKeysAreApart(t *testing.T) {
	var r Registry
	Put(&r, keyA{}, "a")
	if got := Get(&r, keyB{}, func() string { return "b" }); got != "b" {
		t.Fatalf("keyB = %q, want b", got)
	}
	if got := Get(&r, keyA{}, func() string { return "made" }); got != "a" {
		t.Fatalf("keyA = %q, want the value put, a", got)
	}
}

func TestPutLastWins(t *testing.T) {
	var r Registry
	Put(&r, keyA{}, 1)
	Put(&r, keyA{}, 2)
	if got := Get(&r, keyA{}, func() int { return 3 }); got != 2 {
		t.Fatalf("Get = %d, want 2", got)
	}
}

type face interface{ F() }

func TestNilReadsAsZero(t *testing.T) {
	var r Registry
	var none face
	Put(&r, keyA{}, none)
	if got := Get(&r, keyA{}, func() face { return nil }); got != nil {
		t.Fatalf("Get = %v, want nil", got)
	}
	if got := Get(&r, keyB{}, func() face { return nil }); got != nil {
		t.Fatalf("Get of a made nil = %v, want nil", got)
	}
}

func TestMakeMayGetAnotherKey(t *testing.T) {
	var r Registry
	got := Get(&r, keyA{}, func() int { return Get(&r, keyB{}, func() int { return 2 }) + 1 })
	if got != 3 {
		t.Fatalf("Get = %d, want 3", got)
	}
}
