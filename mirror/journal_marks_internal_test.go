package mirror

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// A restart replays only the records of a journal file that no valid mark names
// as done. A marks file cut short or garbled (a machine crash: marks are not
// fsynced) only makes records replayed again, never hides one that is not done,
// and marks whose journal file is gone are deleted.
func TestJournal_MarksSkipDoneRecordsAtReplay(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, marks string)
		want   []string // keys replayed
	}{
		{name: "intact", want: []string{"k/1", "k/3"}},
		{name: "last mark cut short", damage: func(t *testing.T, marks string) {
			require.NoError(t, os.Truncate(marks, journalMarkSize+journalMarkSize/2))
		}, want: []string{"k/1", "k/2", "k/3"}},
		{name: "zeros after the marks", damage: func(t *testing.T, marks string) {
			appendBytes(t, marks, make([]byte, 4*journalMarkSize))
		}, want: []string{"k/1", "k/3"}},
		{name: "a garbled mark", damage: func(t *testing.T, marks string) {
			data, err := os.ReadFile(marks)
			require.NoError(t, err)
			data[3] ^= 0xff // the offset of the first mark
			require.NoError(t, os.WriteFile(marks, data, 0o644))
		}, want: []string{"k/0", "k/1", "k/2", "k/3"}},
		{name: "a mark of another record at the same offset", damage: func(t *testing.T, marks string) {
			require.NoError(t, os.WriteFile(marks, encodeMark(journalPos{off: 0, crc: 12345}), 0o644))
		}, want: []string{"k/0", "k/1", "k/2", "k/3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, dir := newTestJournal(t)
			var files []*journalFile
			var poss []journalPos
			for i := range 4 {
				jf, pos, err := j.append(fmt.Sprintf("k/%d", i), []byte(fmt.Sprintf("segment %d", i)))
				require.NoError(t, err)
				files, poss = append(files, jf), append(poss, pos)
			}
			require.Same(t, files[0], files[3], "one file")
			j.done(files[0], poss[0])
			j.done(files[2], poss[2])
			require.NoError(t, j.close())
			marks := j.marksPath(files[0].seq)
			if tt.damage != nil {
				tt.damage(t, marks)
			}
			orphan := j.marksPath(files[0].seq + 7)
			require.NoError(t, os.WriteFile(orphan, encodeMark(journalPos{}), 0o644))

			j2, recs, err := openJournal(dir)
			require.NoError(t, err)
			var keys []string
			for _, r := range recs {
				keys = append(keys, r.key)
			}
			require.Equal(t, tt.want, keys)
			require.NoFileExists(t, orphan, "marks without their journal file are deleted")

			// Marks written after a restart count at the next one too, past a
			// damaged tail.
			for _, r := range recs {
				if r.key != "k/3" {
					j2.done(r.file, r.pos)
				}
			}
			require.NoError(t, j2.close())
			j3, recs, err := openJournal(dir)
			require.NoError(t, err)
			require.Len(t, recs, 1)
			require.Equal(t, "k/3", recs[0].key)
			j3.done(recs[0].file, recs[0].pos)
			require.NoError(t, j3.close())
			require.NoFileExists(t, recs[0].file.path, "a file whose last record is done is deleted")
			require.NoFileExists(t, marks, "with its marks")
		})
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, errors.Join(err, f.Close()))
}
