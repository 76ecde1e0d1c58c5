// Package tasks holds the quickstart's tasks: plain Go functions, annotated.
// bananas_gen.go declares the typed stubs (SendEmail, ResizeImage, CountWords)
// and Register.
package tasks

//go:generate go tool bananagen

import (
	"context"
	"fmt"
	"strings"
	"time"
)

type EmailArgs struct {
	To, Subject string
}

//bananas:task route=email priority=high retries=2 timeout=10s
func sendEmail(ctx context.Context, a EmailArgs) error {
	if !strings.Contains(a.To, "@") {
		return fmt.Errorf("invalid recipient %q: no @", a.To)
	}
	return nil
}

type ResizeArgs struct {
	URL   string
	Width int
}

type ResizeResult struct {
	URL   string
	Bytes int
}

//bananas:task route=images
func resizeImage(ctx context.Context, a ResizeArgs) (ResizeResult, error) {
	select { // pretend to work
	case <-time.After(20 * time.Millisecond):
	case <-ctx.Done():
		return ResizeResult{}, ctx.Err()
	}
	return ResizeResult{URL: strings.TrimSuffix(a.URL, ".png") + fmt.Sprintf("-%dw.png", a.Width), Bytes: a.Width * 97}, nil
}

type Text struct{ Body string }

//bananas:task priority=low
func countWords(ctx context.Context, t Text) (int, error) {
	return len(strings.Fields(t.Body)), nil
}

// sumCounts adds up word counts: the last step of the quickstart's workflow,
// after a Gather of count_words steps.
//
//bananas:task
func sumCounts(ctx context.Context, counts []int) (int, error) {
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, nil
}
