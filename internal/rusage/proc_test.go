package rusage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name, line string
		want       time.Duration
		wantErr    bool
	}{
		{name: "minio", line: "6697 (minio) S 1 6696 6696 0 -1 4194560 52001 0 12 0 5123 877 0 0 20 0 23 0 2556131 3068002304 61022 18446744073709551615 1 1 0 0 0 0 0 0 2143420159 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			want: (5123 + 877) * 10 * time.Millisecond},
		{name: "a name with spaces and parentheses", line: "42 (a b) (c)) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0\n",
			want: 100 * time.Millisecond},
		{name: "no time yet", line: "1 (x) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0", want: 0},
		{name: "no command name", line: "1 x S 0 1 1 0 -1 0 0 0 0 0 7 3", wantErr: true},
		{name: "cut short", line: "1 (x) S 0 1 1 0 -1 0 0 0 0 0 7", wantErr: true},
		{name: "not a number", line: "1 (x) S 0 1 1 0 -1 0 0 0 0 0 7 x3 0", wantErr: true},
		{name: "negative", line: "1 (x) S 0 1 1 0 -1 0 0 0 0 0 -7 3 0", wantErr: true},
		{name: "empty", line: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.line))
			if tt.wantErr {
				require.ErrorIs(t, err, errProcStat)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
