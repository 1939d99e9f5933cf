package reliability_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/madmin-go/v3"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// policyRole is one least-privilege role of deploy/iam, as a MinIO user.
type policyRole struct {
	file   string // policy file under deploy/iam
	user   string // access key
	secret string
}

// createRole installs the policy of deploy/iam/{file} (BUCKET, PREFIX and NAMESPACE
// filled in) on the MinIO of srv through the admin API, with a user holding only that
// policy; both are removed when the test ends.
func createRole(t *testing.T, adm *madmin.AdminClient, file, bucketName, prefix, namespace string) policyRole {
	t.Helper()
	ctx := ctxTimeout(t, time.Minute)
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "iam", file))
	require.NoError(t, err)
	policy := strings.NewReplacer("BUCKET", bucketName, "PREFIX", prefix, "NAMESPACE", namespace).Replace(string(raw))
	r := policyRole{file: file, user: randomName("tr-" + strings.TrimSuffix(file, ".json") + "-"), secret: randomName("secret-")}
	name := r.user + "-policy"
	require.NoError(t, adm.AddCannedPolicy(ctx, name, []byte(policy)), "MinIO accepts %s", file)
	require.NoError(t, adm.AddUser(ctx, r.user, r.secret))
	_, err = adm.AttachPolicy(ctx, madmin.PolicyAssociationReq{Policies: []string{name}, User: r.user})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = adm.RemoveUser(ctx, r.user)
		_ = adm.RemoveCannedPolicy(ctx, name)
	})
	return r
}

// openAs opens the bucket with the credentials of role r.
func openAs(t *testing.T, srv s3Server, r policyRole, bucketName string) *s3bucket.Bucket {
	t.Helper()
	return srv.withCreds(r.user, r.secret).open(t, bucketName, "", false, 30*time.Second, 0)
}

func (srv s3Server) withCreds(access, secret string) s3Server {
	srv.access, srv.secret = access, secret
	return srv
}

// requireDenied requires err to be the server's AccessDenied.
func requireDenied(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, bucket.ErrAccessDenied, what)
}

// TestPolicies_LeastPrivilege creates MinIO users with the policies of deploy/iam and
// tries each role against what it must and must not do: a replica appends and reads,
// and is refused a compacted segment, a mark, any delete and another tenant's
// prefix; the compactor compacts and deletes; the restore user restores and can
// write nothing. A key that matches the replica's pattern but not the layout is
// ignored by readers and named by StrayKeys (verify).
func TestPolicies_LeastPrivilege(t *testing.T) {
	srv := sharedS3(t)
	ctx := ctxTimeout(t, 3*time.Minute)
	adm, err := madmin.New(srv.endpoint, srv.access, srv.secret, false)
	require.NoError(t, err)
	const prefix = "prod"
	name := srv.newBucket(t, "rel-iam-")
	root := newStore(t, srv.open(t, name, "", false, 30*time.Second, 0), prefix)

	acme := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}
	other := transcript.TranscriptRef{Namespace: "other", AgentID: "coder", SessionID: "s1"}
	_, err = root.AppendSegment(ctx, other, [][]byte{[]byte(okEntry)}, transcript.NewRandomWriter())
	require.NoError(t, err)

	replica := createRole(t, adm, "replica.json", name, prefix, "")
	tenant := createRole(t, adm, "tenant-replica.json", name, prefix, "acme")
	compactor := createRole(t, adm, "compactor.json", name, prefix, "")
	restore := createRole(t, adm, "restore.json", name, prefix, "")

	t.Run("replica", func(t *testing.T) {
		for _, r := range []policyRole{replica, tenant} {
			b := openAs(t, srv, r, name)
			s := newStore(t, b, prefix)
			w := transcript.NewRandomWriter()
			ref := acme
			ref.SessionID = "by-" + strings.TrimSuffix(r.file, ".json")
			var keys []string
			for i, e := range chainEntries(ref.SessionID, 4) {
				info, err := s.AppendSegment(ctx, ref, [][]byte{e}, w)
				require.NoError(t, err, "%s appends segment %d", r.file, i)
				keys = append(keys, info.Key)
			}
			res, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Len(t, res.Entries, 4)

			_, err = s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
			requireDenied(t, err, r.file+": writing a compacted segment")
			sp := strings.TrimSuffix(keys[0][:strings.LastIndex(keys[0], "/L0/")], "/")
			name0 := keys[0][strings.LastIndex(keys[0], "/")+1:]
			for _, k := range []string{
				sp + "/L1/" + name0,
				sp + "/gc/L1/" + strings.TrimSuffix(name0, transcript.SegmentExt) + ".mark.json",
				sp + "/gc/L0/" + strings.TrimSuffix(name0, transcript.SegmentExt) + ".mark.json",
			} {
				requireDenied(t, b.Put(ctx, k, strings.NewReader("{}"), 2, bucket.PutOptions{}), r.file+": put "+k)
			}
			requireDenied(t, b.Delete(ctx, keys[0]), r.file+": delete")
			requireDenied(t, b.DeleteBatch(ctx, keys), r.file+": batch delete")
			for _, k := range keys {
				_, err := b.Stat(ctx, k)
				require.NoError(t, err)
			}

			// A key the pattern allows but the layout does not know.
			stray := sp + "/L1/x/L0/y" + transcript.SegmentExt
			require.NoError(t, b.Put(ctx, stray, strings.NewReader("junk"), 4, bucket.PutOptions{}))
			res, err = s.ReadAll(ctx, ref)
			require.NoError(t, err, "readers ignore a key outside the layout")
			require.Len(t, res.Entries, 4)
			strays, err := root.StrayKeys(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, []string{stray}, strays, "verify names it")

			// A large image: its payload object is the replica's to create, never
			// to mark or delete.
			img := imageEntry(ref.SessionID+"-img", ref.SessionID+"-c", byte(len(r.file)))
			_, err = s.AppendSegment(ctx, ref, [][]byte{img}, w)
			require.NoError(t, err, "%s stores a payload object", r.file)
			res, err = s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, string(img), string(res.Entries[len(res.Entries)-1].Raw))
			payloads := payloadKeysUnder(t, root.Bucket(), prefix+"/acme/payloads/")
			require.NotEmpty(t, payloads)
			requireDenied(t, b.Put(ctx, prefix+"/acme/payloads/gc/x.mark.json", strings.NewReader("{}"), 2, bucket.PutOptions{}), r.file+": mark a payload")
			requireDenied(t, b.Delete(ctx, payloads[0]), r.file+": delete a payload")

			// A follower's marker (transcript follow): the replica's to put
			// and to look for.
			id := "f-" + strings.TrimSuffix(r.file, ".json")
			require.NoError(t, s.PutFollowerMarker(ctx, "acme", id, []byte("{}")), "%s puts its follower marker", r.file)
			has, err := s.FollowerMarkerExists(ctx, "acme", id)
			require.NoError(t, err)
			require.True(t, has)
		}

		// The per-tenant replica: nothing of another tenant.
		b := openAs(t, srv, tenant, name)
		s := newStore(t, b, prefix)
		_, err := s.AppendSegment(ctx, other, [][]byte{[]byte(okEntry2)}, transcript.NewRandomWriter())
		requireDenied(t, err, "append to another tenant")
		_, err = s.ReadAll(ctx, other)
		requireDenied(t, err, "read another tenant")
		_, err = s.ListSessions(ctx, "other", "coder")
		requireDenied(t, err, "list another tenant")
		_, err = s.ListNamespaces(ctx)
		requireDenied(t, err, "list the tenants")
		requireDenied(t, s.PutFollowerMarker(ctx, "other", "f-x", []byte("{}")), "a follower marker of another tenant")
	})

	t.Run("compactor", func(t *testing.T) {
		s := newStore(t, openAs(t, srv, compactor, name), prefix)
		for _, id := range []string{"by-replica", "by-tenant-replica"} {
			ref := acme
			ref.SessionID = id
			res, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			require.Len(t, res.Compactions, 1)
			require.Equal(t, 5, res.Deleted, "the compactor deletes the inputs it verified")
			got, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Len(t, got.Entries, 5)
			require.Len(t, got.Segments, 1)
		}
		// Payload objects: the compactor marks those nothing references and may
		// delete them.
		gone := withSession(acme, "gone")
		_, err := root.AppendSegment(ctx, gone, [][]byte{imageEntry("g", "", 99)}, transcript.NewRandomWriter())
		require.NoError(t, err)
		require.NoError(t, root.Delete(ctx, gone))
		res, err := s.CollectPayloads(ctx, "acme", transcript.PayloadGCOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, res.Marked)
		require.Equal(t, 2, res.Referenced)
		marks := payloadKeysUnder(t, root.Bucket(), prefix+"/acme/payloads/gc/")
		require.Len(t, marks, 1)
		hash := strings.TrimSuffix(marks[0][strings.LastIndex(marks[0], "/")+1:], ".mark.json")
		require.NoError(t, s.Bucket().Delete(ctx, prefix+"/acme/payloads/"+hash+".zst"), "the compactor deletes payload objects")
		require.NoError(t, s.Bucket().Delete(ctx, marks[0]))
	})

	t.Run("restore", func(t *testing.T) {
		b := openAs(t, srv, restore, name)
		s := newStore(t, b, prefix)
		res, err := s.ReadAll(ctx, withSession(acme, "by-replica"))
		require.NoError(t, err)
		require.Len(t, res.Entries, 5, "with the image, read from its payload object")
		_, err = s.AppendSegment(ctx, acme, [][]byte{[]byte(okEntry)}, transcript.NewRandomWriter())
		requireDenied(t, err, "restore user appends")
		requireDenied(t, b.Delete(ctx, res.Segments[0].Key), "restore user deletes")
		requireDenied(t, s.PutFollowerMarker(ctx, "acme", "f-restore", []byte("{}")), "restore user puts a follower marker")
		_, err = s.Compact(ctx, withSession(acme, "by-replica"), transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
		require.NoError(t, err, "nothing to compact, nothing written")

		// The restore command, with these credentials, rebuilds the local files.
		out := t.TempDir()
		cmd := exec.CommandContext(ctx, buildCmd(t, "transcript"), "restore",
			"--store", "s3://"+name+"/"+prefix+"?endpoint="+srv.endpoint+"&insecure=true&region=us-east-1",
			"--ns", "acme", "--out", out)
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+restore.user, "AWS_SECRET_ACCESS_KEY="+restore.secret, "TRANSCRIPT_STORE=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "restore: %s%s", stdout.String(), stderr.String())
		require.Contains(t, stdout.String(), "restored 2")
	})
}

// chainEntries returns a Pi session header followed by n-1 custom entries in a
// chain, ids prefixed by p.
func chainEntries(p string, n int) [][]byte {
	out := [][]byte{[]byte(`{"type":"session","version":3,"id":"` + p + `","timestamp":"2026-09-25T22:28:55.488Z","cwd":"/"}`)}
	parent := "null"
	for i := range n - 1 {
		id := p + "-" + string(rune('a'+i))
		out = append(out, []byte(`{"type":"custom","id":"`+id+`","parentId":`+parent+`,"timestamp":"2026-09-25T22:28:55.554Z","customType":"note"}`))
		parent = `"` + id + `"`
	}
	return out
}

// withSession returns ref naming session id instead.
func withSession(ref transcript.TranscriptRef, id string) transcript.TranscriptRef {
	ref.SessionID = id
	return ref
}

// imageEntry returns a user message of id holding a base64 image above the
// default payload threshold, its bytes drawn from seed.
func imageEntry(id, parent string, seed byte) []byte {
	raw := make([]byte, transcript.DefaultPayloadThreshold)
	for i := range raw {
		raw[i] = byte(i*7) ^ seed
	}
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return []byte(`{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":[{"type":"image","data":"` +
		base64.StdEncoding.EncodeToString(raw) + `","mimeType":"image/png"}]}}`)
}

// payloadKeysUnder lists the payload objects under p (marks left out).
func payloadKeysUnder(t *testing.T, b bucket.Bucket, p string) []string {
	t.Helper()
	var out []string
	require.NoError(t, b.List(context.Background(), bucket.ListOptions{Prefix: p}, func(oi bucket.ObjectInfo) error {
		if !strings.Contains(strings.TrimPrefix(oi.Key, p), "/") {
			out = append(out, oi.Key)
		}
		return nil
	}))
	return out
}
