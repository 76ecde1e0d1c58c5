// Package keytasks declares keyed and limited tasks as generated code, for
// the runtime's tests of what bananagen's key= and limit keys emit: the key
// functions below are bananagen's, compiled and run. Their wire names carry
// a t_key_ prefix: wire names are unique across every package bananagen
// loads. Nothing registers them on a worker but the tests that mean to.
package keytasks

//go:generate go tool bananagen

import "context"

// ShopID is a string type of the args.
type ShopID string

// Level is an unsigned type of the args.
type Level uint8

// Order is the args of every task here.
type Order struct {
	Customer string
	Seq      int64
	Total    uint64
	Paid     bool
	Shop     *Shop
	Home     Shop
}

// Shop is a struct within the args, by pointer and by value.
type Shop struct {
	ID    ShopID
	Owner *Owner
}

// Owner is a struct two pointers down.
type Owner struct {
	Account int32
	VIP     bool
	Tier    Level
}

//bananas:task name=t_key_customer route=keyed key=Customer max_running=2 rate=100/s burst=10
func byCustomer(ctx context.Context, o Order) error { return nil }

//bananas:task name=t_key_account route=keyed key=Shop.Owner.Account
func byAccount(ctx context.Context, o *Order) error { return nil }

//bananas:task name=t_key_home route=keyed key=Home.ID
func byHome(ctx context.Context, o Order) error { return nil }

//bananas:task name=t_key_tier route=keyed key=Shop.Owner.Tier
func byTier(ctx context.Context, o Order) error { return nil }

//bananas:task name=t_key_vip route=keyed key=Shop.Owner.VIP
func byVIP(ctx context.Context, o Order) error { return nil }

//bananas:task name=t_key_seq route=keyed key=Seq
func bySeq(ctx context.Context, o Order) error { return nil }

//bananas:task name=t_key_total route=keyed key=Total
func byTotal(ctx context.Context, o Order) error { return nil }

//bananas:task name=t_key_limited route=keyed max_running=1
func limited(ctx context.Context) error { return nil }
