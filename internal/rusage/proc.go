package rusage

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: Linux reports them in
// USER_HZ, which it fixes at 100 per second for user space on the
// architectures Go supports, whatever the kernel's own tick rate.
const userHZ = 100

// errProcStat is wrapped when a /proc/PID/stat cannot be read as one.
var errProcStat = errors.New("malformed /proc stat line")

// parseProcStat returns the user plus system CPU time (fields 14 and 15,
// utime and stime) of a /proc/PID/stat line. The command name, field 2, is
// in parentheses and may itself hold spaces and parentheses, so the fields
// are counted from the last ')'.
func parseProcStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no command name", errProcStat)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields after the command name", errProcStat, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: CPU time %q", errProcStat, s)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}
