package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// AwaitQuiescence blocks until every segment accepted before the call (by Upload, or
// found in the outbox at start) has left the outbox: it returns nil when all were
// uploaded, and an error wrapping ErrQuarantined when the store rejected some or the
// quarantine holds segments (of stuck sessions not released yet, see Release), or
// ErrLost when an outbox file vanished (also before the call, reported once). If ctx
// ends first, or the Mirror is closed with segments left, it returns an error wrapping
// ctx.Err() (or ErrClosed) that says how many are still pending and the last upload
// error.
func (m *Mirror) AwaitQuiescence(ctx context.Context) error {
	m.mu.Lock()
	jobs := make([]*job, 0, len(m.pending))
	for j := range m.pending {
		jobs = append(jobs, j)
	}
	m.mu.Unlock()
	return m.await(ctx, jobs)
}

// await waits for jobs as AwaitQuiescence describes.
func (m *Mirror) await(ctx context.Context, jobs []*job) error {
	stopped := m.ctx.Done()
	var waitErr error
	for i, j := range jobs {
		select {
		case <-j.done:
			continue
		case <-ctx.Done():
			waitErr = ctx.Err()
		case <-stopped:
			waitErr = ErrClosed
		}
		left := 0
		for _, k := range jobs[i:] {
			select {
			case <-k.done:
			default:
				left++
			}
		}
		if left == 0 {
			break
		}
		st := m.Status()
		return fmt.Errorf("mirror: await quiescence: %w: %d of %d segments still pending (last error: %s)",
			waitErr, left, len(jobs), orNone(st.LastError))
	}
	// A segment lost before the call is reported by this call, once.
	m.mu.Lock()
	for _, j := range jobs {
		delete(m.lost, j)
	}
	total := len(jobs)
	for j := range m.lost {
		jobs = append(jobs, j)
	}
	clear(m.lost)
	m.mu.Unlock()
	failed, quarantined := 0, 0
	var errs []error
	for _, j := range jobs {
		if j.err == nil {
			continue
		}
		failed++
		if errors.Is(j.err, ErrQuarantined) {
			quarantined++
		}
		if len(errs) < 3 {
			errs = append(errs, j.err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("mirror: await quiescence: %d of %d segments failed for good (%d quarantined; %d ended before the call): %w",
			failed, len(jobs), quarantined, len(jobs)-total, errors.Join(errs...))
	}
	// A segment quarantined before the call (a worker may refuse it between
	// Upload's return and this call) was accepted and is not in the store either.
	return m.quarantinedNow()
}

// quarantinedNow returns how many segments the quarantine holds, of how many
// sessions, and an error wrapping ErrQuarantined that gives the reason of one of
// them and wraps the errors that quarantined segments in this process, so that
// errors.Is finds the store's refusal (bucket.ErrExists, say) however the timing
// fell: before or during the call that reports it. It returns nil when the
// quarantine is empty.
func (m *Mirror) quarantinedNow() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	segments, sessions, reason := 0, 0, ""
	var causes []*stuckRecord
	for _, st := range m.stuck {
		if st.Segments == 0 {
			continue
		}
		segments += st.Segments
		sessions++
		if reason == "" || st.Error < reason {
			reason = st.Error
		}
		if st.cause != nil {
			causes = append(causes, st)
		}
	}
	if segments == 0 {
		return nil
	}
	msg := fmt.Sprintf("mirror: await quiescence: %d segments of %d sessions are in the quarantine (%s)", segments, sessions, reason)
	if len(causes) == 0 {
		return fmt.Errorf("%s: %w", msg, ErrQuarantined)
	}
	slices.SortFunc(causes, func(a, b *stuckRecord) int { return strings.Compare(a.Session, b.Session) })
	errs := make([]error, 0, min(len(causes), 3))
	for _, st := range causes[:min(len(causes), 3)] {
		errs = append(errs, st.cause)
	}
	return fmt.Errorf("%s: %w: %w", msg, ErrQuarantined, errors.Join(errs...))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
