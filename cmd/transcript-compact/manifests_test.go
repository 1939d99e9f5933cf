package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// jobSpec is the part of a batch/v1 Job spec the manifests must get right.
type jobSpec struct {
	CompletionMode string `yaml:"completionMode"`
	Completions    int    `yaml:"completions"`
	Parallelism    int    `yaml:"parallelism"`
	Template       struct {
		Spec struct {
			Containers []struct {
				Args []string `yaml:"args"`
				Env  []struct {
					Name      string `yaml:"name"`
					ValueFrom struct {
						FieldRef struct {
							FieldPath string `yaml:"fieldPath"`
						} `yaml:"fieldRef"`
					} `yaml:"valueFrom"`
				} `yaml:"env"`
			} `yaml:"containers"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

// TestManifests checks the Kubernetes manifests in deploy/k8s: every index of an
// indexed Job gets its own shard of the right count, and the job accepts the args.
func TestManifests(t *testing.T) {
	files, err := filepath.Glob("../../deploy/k8s/*.yaml")
	require.NoError(t, err)
	jobs := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc struct {
			Kind string  `yaml:"kind"`
			Spec jobSpec `yaml:"spec"`
		}
		require.NoError(t, yaml.Unmarshal(data, &doc), f)
		spec := doc.Spec
		switch doc.Kind {
		case "Job":
		case "CronJob":
			var cron struct {
				Spec struct {
					JobTemplate struct {
						Spec jobSpec `yaml:"spec"`
					} `yaml:"jobTemplate"`
				} `yaml:"spec"`
			}
			require.NoError(t, yaml.Unmarshal(data, &cron), f)
			spec = cron.Spec.JobTemplate.Spec
		default:
			continue
		}
		jobs++
		t.Run(filepath.Base(f), func(t *testing.T) {
			require.Equal(t, "Indexed", spec.CompletionMode)
			require.Positive(t, spec.Completions)
			require.Equal(t, spec.Completions, spec.Parallelism)
			require.Len(t, spec.Template.Spec.Containers, 1)
			c := spec.Template.Spec.Containers[0]
			require.Contains(t, c.Args, fmt.Sprintf("--shard=$(SHARD_INDEX)/%d", spec.Completions))
			found := false
			for _, e := range c.Env {
				if e.Name == "SHARD_INDEX" {
					found = e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
				}
			}
			require.True(t, found, "SHARD_INDEX comes from the completion index")
			for _, idx := range []int{0, spec.Completions - 1} {
				args := make([]string, 0, len(c.Args)+1)
				for _, a := range c.Args {
					a = strings.ReplaceAll(a, "$(SHARD_INDEX)", fmt.Sprint(idx))
					a = strings.ReplaceAll(a, "$(TRANSCRIPT_STORE)", "file://"+t.TempDir())
					args = append(args, a)
				}
				var out, errOut bytes.Buffer
				err := run(context.Background(), append(args, "--dry-run"), &out, &errOut, func(string) string { return "" })
				require.NoError(t, err, errOut.String())
				require.Contains(t, out.String(), fmt.Sprintf(`"shard":"%d/%d"`, idx, spec.Completions))
			}
		})
	}
	require.Equal(t, 2, jobs, "the indexed Job and the CronJob")
}

// TestManifests_PinnedImages: every image of deploy/k8s names a release tag (or a
// digest), never :latest or no tag, so that a rollout runs what was reviewed.
func TestManifests_PinnedImages(t *testing.T) {
	files, err := filepath.Glob("../../deploy/k8s/*.yaml")
	require.NoError(t, err)
	images := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n") {
			ref, ok := strings.CutPrefix(strings.TrimSpace(line), "image:")
			if !ok {
				continue
			}
			ref, _, _ = strings.Cut(strings.TrimSpace(ref), " ")
			images++
			name := ref[strings.LastIndex(ref, "/")+1:]
			_, tag, tagged := strings.Cut(name, ":")
			require.True(t, tagged || strings.Contains(ref, "@sha256:"), "%s: image %s has no tag", f, ref)
			require.NotEqual(t, "latest", tag, "%s: image %s", f, ref)
		}
	}
	require.Equal(t, 5, images, "the two compaction manifests, the server's, and Pi's and the follower's in the follow sidecar")
}
