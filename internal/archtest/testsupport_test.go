package archtest_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testOnly are the packages (prefixes) a shipped binary must not link: the testing
// package and the test libraries, and the project's test support.
var testOnly = []string{
	"testing",
	"net/http/httptest",
	"github.com/stretchr/testify",
	"go.uber.org/goleak",
	"github.com/Shopify/toxiproxy",
	"github.com/prometheus/client_golang/prometheus/testutil",
	module + "internal/reliability",
	module + "transcript/bucket/faultbucket",
}

// isTestOnly reports a package no command may link: one of testOnly, or a package
// of the project named for test support (…test: buckettest, s3test, churntest).
func isTestOnly(pkg string) bool {
	for _, p := range testOnly {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return strings.HasPrefix(pkg, module) && strings.HasSuffix(path.Base(pkg), "test")
}

// TestCommandsLinkNoTestSupport checks `go list -deps` of every command: test
// support lives in packages only tests import, so the binaries link none of it.
func TestCommandsLinkNoTestSupport(t *testing.T) {
	commands := 0
	for _, p := range goList(t, "ImportPath,Deps", module+"cmd/...") {
		commands++
		require.Greater(t, len(p.Deps), 10, "%s: no dependencies listed", p.ImportPath)
		for _, dep := range p.Deps {
			require.False(t, isTestOnly(dep), "%s links %s, which only tests may import", p.ImportPath, dep)
		}
	}
	require.GreaterOrEqual(t, commands, 4, "too few commands listed")
}

// listedPackage is a package as `go list -json` describes it.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList runs `go list -json=fields` on patterns.
func goList(t *testing.T, fields string, patterns ...string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json=" + fields}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	var pkgs []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p listedPackage
		require.NoError(t, dec.Decode(&p))
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// The rule names what it means to: a check that cannot fail checks nothing.
func TestIsTestOnly(t *testing.T) {
	tests := map[string]bool{
		"testing":                                        true,
		"testing/iotest":                                 true,
		"github.com/stretchr/testify/require":            true,
		"go.uber.org/goleak":                             true,
		module + "transcript/bucket/buckettest":          true,
		module + "transcript/bucket/faultbucket":         true,
		module + "internal/s3test":                       true,
		module + "internal/churntest":                    true,
		"fmt":                                            false,
		"github.com/prometheus/client_golang/prometheus": false,
		module + "transcript/bucket/metricbucket":        false,
		module + "internal/rclone":                       false,
	}
	for pkg, want := range tests {
		require.Equal(t, want, isTestOnly(pkg), pkg)
	}
}
