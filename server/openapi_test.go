package server_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestOpenAPIDescribesEveryRoute checks that every route of the router is in
// openapi.yaml, and that the document describes no route the router lacks.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	data, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err)
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."))
	documented := map[server.Route]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented[server.Route{Method: strings.ToUpper(method), Path: path}] = true
			}
		}
	}
	ts := newServer(t, membucket.New(), server.Config{})
	served := map[server.Route]bool{}
	for _, r := range ts.srv.Routes() {
		served[r] = true
		require.True(t, documented[r], "route %s %s is not in openapi.yaml", r.Method, r.Path)
	}
	for r := range documented {
		require.True(t, served[r], "openapi.yaml describes %s %s, which the router does not serve", r.Method, r.Path)
	}
}
