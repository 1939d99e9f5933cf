package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/cli"
)

// failAfter is a writer that fails every write after the first n.
type failAfter struct {
	n, writes int
	buf       bytes.Buffer
}

var errFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	f.writes++
	if f.n == 0 {
		return 0, fmt.Errorf("write #%d: %w", f.writes, errFull)
	}
	f.n--
	return f.buf.Write(p)
}

func TestCheckedWriter(t *testing.T) {
	w := &failAfter{n: 1}
	c := cli.NewCheckedWriter(w)
	_, err := fmt.Fprint(c, "one")
	require.NoError(t, err)
	require.NoError(t, c.Err())
	_, _ = fmt.Fprint(c, "two") // an unchecked write, as a command's report makes
	_, _ = fmt.Fprint(c, "three")
	require.ErrorIs(t, c.Err(), errFull)
	require.Equal(t, "write #2: no space left on device", c.Err().Error(), "the first error is kept")
	require.Equal(t, "one", w.buf.String())
}
