package queue

// Checkpoint is the STRING holding job id's last checkpoint
// (runtime.Checkpoint), with a TTL: the job's, kept across its runs, on the
// route's slot beside the leases its write is fenced by.
func (k Keys) Checkpoint(id string) string { return k.base + "checkpoint:" + id }
