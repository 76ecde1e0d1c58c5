package runtime

import (
	"context"
	"sync"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/ext"
	"github.com/bananas-go/bananas/runtime/internal/metrics"
)

// ReportOutbox makes c's operator surface show the outbox r reads: its
// backlog in /metrics (bananas_outbox_pending, bananas_outbox_lag_seconds,
// read at scrape time), `app outbox`, `app queues` and the dashboard's
// overview. Package outbox's relays call it for the client they move jobs
// into; a reader that also has Relayed() int64 adds its count to
// bananas_outbox_relayed_total. The backlog is read from the first reader;
// the counts of every reader are summed.
func (c *Client) ReportOutbox(r admin.OutboxReader) {
	if r == nil {
		return
	}
	o := c.outboxReaders()
	o.mu.Lock()
	o.readers = append(o.readers, r)
	first := len(o.readers) == 1
	o.mu.Unlock()
	if first {
		c.metrics.ReadOutbox(o.gauges)
	}
}

// outboxKey keeps the client's outbox readers in its extensions.
type outboxKey struct{}

type outboxReaders struct {
	mu      sync.Mutex
	readers []admin.OutboxReader
}

func (c *Client) outboxReaders() *outboxReaders {
	return ext.Get(&c.ext, outboxKey{}, func() *outboxReaders { return &outboxReaders{} })
}

// Outbox reads the backlog, its Relayed the sum of every reader's count.
func (o *outboxReaders) Outbox(ctx context.Context) (admin.Outbox, error) {
	o.mu.Lock()
	rs := append([]admin.OutboxReader(nil), o.readers...)
	o.mu.Unlock()
	if len(rs) == 0 {
		return admin.Outbox{}, admin.ErrNoOutbox
	}
	b, err := rs[0].Outbox(ctx)
	if err != nil {
		return admin.Outbox{}, err
	}
	b.Relayed = o.relayed(rs)
	return b, nil
}

func (o *outboxReaders) relayed(rs []admin.OutboxReader) int64 {
	var n int64
	for _, r := range rs {
		if c, ok := r.(interface{ Relayed() int64 }); ok {
			n += c.Relayed()
		}
	}
	return n
}

// gauges is the outbox as the metrics read it at scrape time.
func (o *outboxReaders) gauges(ctx context.Context) (metrics.Outbox, error) {
	b, err := o.Outbox(ctx)
	if err != nil {
		o.mu.Lock()
		rs := append([]admin.OutboxReader(nil), o.readers...)
		o.mu.Unlock()
		return metrics.Outbox{Relayed: o.relayed(rs)}, err
	}
	return metrics.Outbox{Pending: b.Pending, Lag: b.OldestAge, Relayed: b.Relayed}, nil
}

// Outbox is the client's outbox reader for the admin layer (Inspector.Outbox);
// nil when no relay reports to the client.
func (in *inspector) Outbox() admin.OutboxReader {
	o := in.c.outboxReaders()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.readers) == 0 {
		return nil
	}
	return o
}
