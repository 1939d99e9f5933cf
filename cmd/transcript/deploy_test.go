package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// k8sContainer is the part of a container spec the follow sidecar's test reads.
type k8sContainer struct {
	Name          string   `yaml:"name"`
	Image         string   `yaml:"image"`
	RestartPolicy string   `yaml:"restartPolicy"`
	Args          []string `yaml:"args"`
	Env           []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

// agentFixture makes a Pi agent directory holding the version 3 fixture in its
// sessions root; it returns the directory.
func agentFixture(t *testing.T) string {
	t.Helper()
	root, _ := piRoot(t)
	require.NoError(t, os.Remove(filepath.Join(root, "README.txt")))
	return filepath.Dir(root)
}

// requireFixtureStored requires the store to hold the fixture's session, all
// of it, under namespace ns.
func requireFixtureStored(t *testing.T, store, ns string) {
	t.Helper()
	want, err := os.ReadFile(fixtureV3)
	require.NoError(t, err)
	got := ok(t, "export", "--store", store, "--ns", ns, "--agent", "--tmp-browse--", "--session", fixtureV3ID)
	require.Equal(t, string(want), got)
}

// TestDeploy_FollowSidecar: deploy/k8s/follow-sidecar.yaml runs transcript follow
// as a native sidecar of Pi, reading the sessions root of Pi's agent volume
// (read-only), keeping its state and outbox on a persistent volume, with the
// replica role's credentials; its arguments, run with --once on local
// directories in place of the volumes, upload Pi's sessions.
func TestDeploy_FollowSidecar(t *testing.T) {
	data, err := os.ReadFile("../../deploy/k8s/follow-sidecar.yaml")
	require.NoError(t, err)
	var doc struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					TerminationGracePeriodSeconds int            `yaml:"terminationGracePeriodSeconds"`
					InitContainers                []k8sContainer `yaml:"initContainers"`
					Containers                    []k8sContainer `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
			VolumeClaimTemplates []struct {
				Metadata struct {
					Name string `yaml:"name"`
				} `yaml:"metadata"`
			} `yaml:"volumeClaimTemplates"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	require.Equal(t, "StatefulSet", doc.Kind)
	pod := doc.Spec.Template.Spec
	require.Len(t, pod.InitContainers, 1)
	require.Len(t, pod.Containers, 1)
	follow, pi := pod.InitContainers[0], pod.Containers[0]
	require.Equal(t, "Always", follow.RestartPolicy, "a native sidecar: stopped after Pi")
	require.Equal(t, "follow", follow.Args[0])

	mounts := func(c k8sContainer) map[string]string {
		m := map[string]string{}
		for _, v := range c.VolumeMounts {
			m[v.Name] = v.MountPath
			if c.Name == "follow" && v.Name == "pi-agent" {
				require.True(t, v.ReadOnly, "the follower only reads Pi's files")
			}
		}
		return m
	}
	fm, pm := mounts(follow), mounts(pi)
	var agentDir string
	for _, e := range pi.Env {
		if e.Name == "PI_CODING_AGENT_DIR" {
			agentDir = e.Value
		}
	}
	require.NotEmpty(t, agentDir)
	require.Equal(t, agentDir, pm["pi-agent"], "Pi's agent directory is the shared volume")
	require.Equal(t, agentDir, fm["pi-agent"])
	require.Equal(t, agentDir+"/sessions", follow.Args[len(follow.Args)-1], "the follower reads Pi's sessions root")
	var stateDir, drain string
	for _, a := range follow.Args {
		if v, ok := strings.CutPrefix(a, "--state-dir="); ok {
			stateDir = v
		}
		if v, ok := strings.CutPrefix(a, "--drain-timeout="); ok {
			drain = v
		}
	}
	require.Equal(t, stateDir, fm["follow-state"], "the state and the outbox are on the follow-state volume")
	var claims []string
	for _, c := range doc.Spec.VolumeClaimTemplates {
		claims = append(claims, c.Metadata.Name)
	}
	require.ElementsMatch(t, []string{"pi-agent", "follow-state"}, claims, "both volumes persist")
	d, err := time.ParseDuration(drain)
	require.NoError(t, err)
	require.Greater(t, time.Duration(pod.TerminationGracePeriodSeconds)*time.Second, d, "the grace period covers the drain")
	for _, e := range follow.Env {
		if strings.HasPrefix(e.Name, "AWS_") {
			require.Equal(t, "transcript-s3-replica", e.ValueFrom.SecretKeyRef.Name, "the replica role's credentials")
		}
	}

	// The arguments, with local directories for the volumes, upload Pi's sessions.
	agent, state, store := agentFixture(t), t.TempDir(), "file://"+t.TempDir()
	args := []string{"follow", "--once"}
	for _, a := range follow.Args[1:] {
		a = strings.ReplaceAll(a, "$(TRANSCRIPT_STORE)", store)
		a = strings.ReplaceAll(a, agentDir, agent)
		a = strings.ReplaceAll(a, stateDir, state)
		a = strings.ReplaceAll(a, "--metrics-addr=:", "--metrics-addr=127.0.0.1:")
		args = append(args, strings.ReplaceAll(a, ":9464", ":"+freePort(t)))
	}
	r := cli(t, args...)
	require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	requireFixtureStored(t, store, "acme")
}

// TestDeploy_SystemdUnit: deploy/systemd/transcript-follow.service, with its
// example environment, runs transcript follow on Pi's sessions root, keeps its
// state in the unit's state directory, and stops within its stop timeout.
func TestDeploy_SystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/systemd/transcript-follow.service")
	require.NoError(t, err)
	envFile, err := os.ReadFile("../../deploy/systemd/transcript-follow.env.example")
	require.NoError(t, err)
	keys := map[string]string{}
	for _, line := range strings.Split(string(unit), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = v
		}
	}
	for k, want := range map[string]string{"Restart": "always", "KillSignal": "SIGTERM", "StateDirectory": "transcript-follow"} {
		require.Equal(t, want, keys[k], k)
	}
	exec := strings.Fields(keys["ExecStart"])
	require.Equal(t, "/usr/local/bin/transcript", exec[0])
	require.Equal(t, "follow", exec[1])
	stop, err := time.ParseDuration(keys["TimeoutStopSec"] + "s")
	require.NoError(t, err)
	drain := regexp.MustCompile(`--drain-timeout=(\S+)`).FindStringSubmatch(keys["ExecStart"])
	require.Len(t, drain, 2)
	d, err := time.ParseDuration(drain[1])
	require.NoError(t, err)
	require.Greater(t, stop, d, "systemd waits for the drain before it kills")

	env := map[string]string{}
	for _, line := range strings.Split(string(envFile), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	require.Contains(t, env, "TRANSCRIPT_STORE")
	require.Contains(t, env, "AWS_ACCESS_KEY_ID")
	agent, store := agentFixture(t), "file://"+t.TempDir()
	env["STATE_DIRECTORY"] = t.TempDir()
	env["TRANSCRIPT_FOLLOW_METRICS_ADDR"] = "127.0.0.1:" + freePort(t)
	args := []string{"follow", "--once"}
	for _, a := range exec[2:] {
		args = append(args, os.Expand(a, func(k string) string { return env[k] }))
	}
	r := cliWith(t, cmdOpts{env: []string{"TRANSCRIPT_STORE=" + store, "PI_CODING_AGENT_DIR=" + agent}}, args...)
	require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	requireFixtureStored(t, store, env["TRANSCRIPT_NS"])
	require.FileExists(t, filepath.Join(env["STATE_DIRECTORY"], "state.json"))
}
