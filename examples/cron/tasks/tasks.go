// Package tasks holds the cron example's entries.
package tasks

//go:generate go tool bananagen

import (
	"context"
	"fmt"
	"time"
)

// tick runs every two seconds.
//
//bananas:cron "@every 2s"
func tick(ctx context.Context) error {
	fmt.Printf("tick at %s\n", time.Now().Format("15:04:05"))
	return nil
}

// nightlyReport runs at 03:00 Berlin time.
//
//bananas:cron "0 3 * * *" tz=Europe/Berlin route=reports
func nightlyReport(ctx context.Context) error { return nil }
