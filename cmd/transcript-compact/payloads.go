package main

import (
	"context"
	"fmt"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
)

// collectPayloads runs the garbage collection of payload objects
// (transcript.Store.CollectPayloads) over each selected namespace, after the
// sessions: once per job (shard 0 of a sharded run) and only when no --agent or
// --session narrows the job, since a payload may be referenced from any session
// of its namespace. A namespace that fails is reported and does not stop the
// others; the job then exits 1. So does a namespace where objects hide sessions
// (findHiding): its payloads are not collected.
func (j *job) collectPayloads(ctx context.Context, sum *summary) error {
	if j.shard != 0 || j.agent != "" || j.session != "" {
		return nil
	}
	namespaces := []string{j.namespace}
	if j.namespace == "" {
		var err error
		if namespaces, err = j.store.ListNamespaces(ctx); err != nil {
			return fmt.Errorf("list namespaces: %w", err)
		}
	}
	opts := transcript.PayloadGCOptions{DeleteDelay: j.opts.DeleteDelay, DryRun: j.opts.DryRun}
	for _, ns := range namespaces {
		if j.hidden[ns] {
			// Segments the listings miss may reference any of its payloads.
			j.mu.Lock()
			sum.payloadsFailed++
			j.mu.Unlock()
			fmt.Fprintf(j.errOut, "payloads of namespace %s: not collected: objects hide sessions whose segments may reference them (above)\n", cli.Escape(ns))
			continue
		}
		res, err := j.store.CollectPayloads(ctx, ns, opts)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		j.mu.Lock()
		sum.PayloadsMarked += res.Marked
		sum.PayloadsDeleted += res.Deleted
		sum.PayloadBytesDeleted += res.DeletedBytes
		sum.PayloadsPending += res.Pending
		if err != nil {
			sum.payloadsFailed++
			sum.Errors = append(sum.Errors, fmt.Sprintf("payloads of namespace %s: %v", ns, err))
			fmt.Fprintf(j.errOut, "payloads of namespace %s: %s\n", ns, cli.Escape(err.Error()))
		}
		j.mu.Unlock()
	}
	return nil
}
