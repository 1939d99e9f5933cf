package reliability_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// trickyOwners are owners whose escaped namespaces a careless encoding would make
// collide with each other or with another tenant's.
var trickyOwners = []repository.Owner{
	{Tenant: "acme", User: "alice"}, {Tenant: "acme", User: "bob"}, {Tenant: "acme~bob", User: "x"},
	{Tenant: "acme", User: "bob~x"}, {Tenant: "acme%7Ebob", User: "x"}, {Tenant: "acme2", User: "alice"},
	{Tenant: "acm", User: "e~alice"}, {Tenant: "acme.", User: "alice"}, {Tenant: "acme", User: ".alice"},
	{Tenant: "..", User: ".."}, {Tenant: "acme/..", User: "bob"}, {Tenant: "ACME", User: "alice"},
	{Tenant: "acme", User: "alice@acme.com"}, {Tenant: "acme", User: "alice%40acme.com"},
}

// TestIsolation_Repository (for the repository): an owner's
// Repository can neither open, read, fork, list, append to, overwrite nor delete
// another owner's sessions (plain and strict), also through crafted ids, and
// hears exactly what it hears for a session that never existed. Distinct owners,
// however their names are crafted, never share a namespace.
func TestIsolation_Repository(t *testing.T) {
	ctx := ctxTimeout(t, time.Minute)
	seen := map[string]repository.Owner{}
	for _, o := range trickyOwners {
		ns, err := o.Namespace()
		if err != nil {
			require.ErrorIs(t, err, repository.ErrInvalid)
			continue
		}
		require.NoError(t, transcript.ValidatePart("namespace", ns))
		prev, dup := seen[ns]
		require.False(t, dup, "owners %+v and %+v share namespace %q", prev, o, ns)
		seen[ns] = o
	}

	b, err := filebucket.New(filepath.Join(t.TempDir(), "bucket"))
	require.NoError(t, err)
	store := newStore(t, b, "")
	repo := func(o repository.Owner) *repository.Repository {
		r, err := repository.New(store, o, repository.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		return r
	}
	victim := repo(repository.Owner{Tenant: "acme", User: "bob"})
	var ids []string
	for _, strict := range []bool{false, true} {
		id := fmt.Sprintf("bobs-%v", strict)
		s, err := victim.Create(ctx, repository.CreateOptions{ID: id, Strict: strict})
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, []byte(`{"type":"message","id":"m1","parentId":null,"message":{"role":"user","content":"bob's secret"}}`)))
		ids = append(ids, id)
	}
	before := allKeys(t, ctx, b)
	victimNS := victim.Namespace()

	probes := 0
	for _, o := range trickyOwners {
		if o == victim.Owner() || o.Validate() != nil {
			continue
		}
		if _, err := o.Namespace(); err != nil {
			continue
		}
		r := repo(o)
		list, err := r.List(ctx)
		require.NoError(t, err)
		require.Empty(t, list, "%+v lists another owner's sessions", o)
		targets := append([]string{}, ids...)
		for _, id := range ids { // crafted ids that try to reach the victim's keys
			targets = append(targets, "../"+victimNS+"/default/"+id, victimNS+"/default/"+id, "default/"+id+"/..", id+"\x00")
		}
		for _, id := range targets {
			for name, call := range map[string]func(id string) error{
				"Open":   func(id string) error { _, err := r.Open(ctx, id); return err },
				"AsOf":   func(id string) error { _, err := r.OpenAsOf(ctx, id, time.Now().Add(time.Hour)); return err },
				"Fork":   func(id string) error { _, err := r.Fork(ctx, id, "m1"); return err },
				"Delete": func(id string) error { return r.Delete(ctx, id) },
				"Collect": func(id string) error {
					_, err := r.CollectUncommitted(ctx, id, 0)
					return err
				},
			} {
				foreign := call(id)
				missing := call(strings.Replace(id, "bobs-", "nobodys-", 1))
				what := fmt.Sprintf("%s(%q) by %+v", name, id, o)
				require.Error(t, foreign, what)
				require.True(t, errors.Is(foreign, bucket.ErrNotFound) || errors.Is(foreign, repository.ErrInvalid), "%s: %v", what, foreign)
				require.Equal(t, strings.ReplaceAll(missing.Error(), "nobodys-", "bobs-"), foreign.Error(),
					"%s: another owner's session must read exactly like a missing one", what)
				probes++
			}
		}
		// Creating the same ids makes the caller's own sessions; appending to them
		// reaches only those.
		for _, id := range ids {
			s, err := r.Create(ctx, repository.CreateOptions{ID: id})
			require.NoError(t, err, "%+v creates its own %s", o, id)
			require.NoError(t, s.Append(ctx, []byte(`{"type":"message","id":"m1","parentId":null,"message":{"role":"user","content":"overwrite?"}}`)))
			probes++
		}
	}
	after := allKeys(t, ctx, b)
	for _, k := range before {
		require.Contains(t, after, k, "the victim's key %s vanished", k)
	}
	for _, k := range after {
		if strings.HasPrefix(k, victimNS+"/") {
			require.Contains(t, before, k, "a key %s appeared in the victim's namespace", k)
		}
	}
	for _, id := range ids {
		s, err := victim.Open(ctx, id)
		require.NoError(t, err)
		es, err := s.Entries(ctx)
		require.NoError(t, err)
		require.Len(t, es, 1)
		require.Contains(t, string(es[0].Raw()), "bob's secret")
	}
	t.Logf("%d probes by %d other owners: all not found (or invalid, like a missing id); the victim's sessions unchanged", probes, len(seen)-1)
}
