package runtime

// pageJSON is a page of a listing: `jobs --json` and GET /api/v1/jobs.
type pageJSON struct {
	Jobs []jobSummaryJSON `json:"jobs"`
	Next string           `json:"next"` // "" at the end
}

// jobSummaryJSON is a job in a listing: a job's fields without args and result.
type jobSummaryJSON struct {
	ID            string   `json:"id"`
	Task          string   `json:"task"`
	Route         string   `json:"route"`
	Priority      Priority `json:"priority"`
	Status        Status   `json:"status"`
	Description   string   `json:"description,omitempty"`
	Attempts      int      `json:"attempts"`
	MaxRetries    int      `json:"max_retries"`
	Error         string   `json:"error,omitempty"`
	CreatedAt     jsonTime `json:"created_at"`
	ScheduledAt   jsonTime `json:"scheduled_at"`
	FinishedAt    jsonTime `json:"finished_at"`
	LeaseDeadline jsonTime `json:"lease_deadline"`
}

func (in *Inspector) pageView(p JobPage) pageJSON {
	return pageJSON{Next: p.Next, Jobs: views(p.Jobs, summaryView)}
}

func summaryView(j JobInfo) jobSummaryJSON {
	return jobSummaryJSON{
		ID: j.ID, Task: j.Name, Route: j.Route, Priority: j.Priority, Status: j.Status, Description: j.Description,
		Attempts: j.Attempts, MaxRetries: j.MaxRetries, Error: j.Error, CreatedAt: jsonTime(j.CreatedAt),
		ScheduledAt: jsonTime(j.ScheduledAt), FinishedAt: jsonTime(j.FinishedAt), LeaseDeadline: jsonTime(j.LeaseDeadline),
	}
}
