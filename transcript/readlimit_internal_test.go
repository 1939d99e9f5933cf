package transcript

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestStore_ReadLimit(t *testing.T) {
	tests := []struct {
		name     string
		conc     int
		segments int
		want     int
	}{
		{"small session", 0, 10, DefaultReadConcurrency},
		{"20 segments", 0, 20, 10},
		{"100 segments", 0, 100, 50},
		{"1,000 segments", 0, 1000, MaxAdaptiveReadConcurrency},
		{"set explicitly", 3, 1000, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Bucket: membucket.New(), ReadConcurrency: tt.conc})
			require.NoError(t, err)
			defer s.Close()
			require.Equal(t, tt.want, s.readLimit(tt.segments))
		})
	}
}
