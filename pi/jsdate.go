package pi

import (
	"math"
	"strconv"
	"time"
)

// maxDateMillis is the largest distance from the epoch a JavaScript Date holds
// (ECMAScript's TimeClip): 100,000,000 days.
const maxDateMillis = 8.64e15

// jsDateMillis returns what Pi's `new Date(entry.timestamp).getTime()` gives for
// the raw JSON value of an entry's "timestamp", and false where that is NaN
// (which JSON.stringify writes as null). Pi writes the ISO strings of
// Date.toISOString, and those are what matters; the other cases follow
// JavaScript so that a hand-made or foreign file gives Pi's context too:
//
//   - a string in ECMAScript's date-time format (see parseJSDate);
//   - a number: the milliseconds themselves, truncated toward zero;
//   - null: 0; true: 1; false: 0;
//   - anything else, or no timestamp: NaN.
func jsDateMillis(raw []byte) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	switch raw[0] {
	case '"':
		s, ok := jsonString(raw)
		if !ok {
			return 0, false
		}
		return parseJSDate(s)
	case 'n':
		return 0, true // new Date(null) is the epoch
	case 't':
		return 1, true
	case 'f':
		return 0, true
	case '{', '[':
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, false
	}
	return timeClip(f)
}

// timeClip is ECMAScript's TimeClip: NaN beyond ±8.64e15 ms, else the value
// truncated toward zero.
func timeClip(f float64) (int64, bool) {
	if math.IsNaN(f) || math.Abs(f) > maxDateMillis {
		return 0, false
	}
	return int64(math.Trunc(f)), true
}

// parseJSDate parses s as V8's Date.parse does for the date-time forms a session
// file can plausibly hold, and reports false for anything else (where V8 may
// still guess, e.g. "Thu, 01 Jan 2026 00:00:00 GMT"; Pi never writes those):
//
//	YYYY, YYYY-MM, YYYY-MM-DD                 UTC
//	±YYYYYY in place of YYYY                  (not -000000)
//	date T HH:mm[:ss[.fraction]] [zone]       no zone: local time
//	zone: Z, or ±HH:mm, or ±HHmm
//
// "T" and "Z" may be lower case and the "T" a space, as V8 accepts. The fraction
// may have any number of digits; milliseconds are its first three, truncated.
// Hour 24 is accepted for 24:00:00.000 (the next midnight). A day past the end of
// its month (1 to 31) rolls into the next month, as in V8.
func parseJSDate(s string) (int64, bool) {
	p := dateScanner{s: s}
	year, ok := p.year()
	if !ok {
		return 0, false
	}
	month, day := 1, 1
	if p.take('-') {
		if month, ok = p.digits(2); !ok || month < 1 || month > 12 {
			return 0, false
		}
		if p.take('-') {
			if day, ok = p.digits(2); !ok || day < 1 || day > 31 {
				return 0, false
			}
		}
	}
	if p.done() {
		return clipTime(time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC))
	}
	if !p.take('T') && !p.take('t') && !p.take(' ') {
		return 0, false
	}
	hour, ok1 := p.digits(2)
	ok2 := p.take(':')
	minute, ok3 := p.digits(2)
	if !ok1 || !ok2 || !ok3 || hour > 24 || minute > 59 {
		return 0, false
	}
	sec, nanos := 0, 0
	if p.take(':') {
		if sec, ok = p.digits(2); !ok || sec > 59 {
			return 0, false
		}
		if p.take('.') {
			ms, n := 0, 0
			for ; p.i < len(p.s) && isDigit(p.s[p.i]); p.i++ {
				if n < 3 {
					ms = ms*10 + int(p.s[p.i]-'0')
				}
				n++
			}
			if n == 0 {
				return 0, false
			}
			for ; n < 3; n++ {
				ms *= 10
			}
			nanos = ms * int(time.Millisecond)
		}
	}
	if hour == 24 && (minute != 0 || sec != 0 || nanos != 0) {
		return 0, false
	}
	loc := time.Local
	switch {
	case p.done():
	case p.take('Z') || p.take('z'):
		loc = time.UTC
	case p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-'):
		sign := 1
		if p.s[p.i] == '-' {
			sign = -1
		}
		p.i++
		oh, ok1 := p.digits(2)
		p.take(':')
		om, ok2 := p.digits(2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		loc = time.FixedZone("", sign*(oh*3600+om*60))
	default:
		return 0, false
	}
	if !p.done() {
		return 0, false
	}
	return clipTime(time.Date(year, time.Month(month), day, hour, minute, sec, nanos, loc))
}

// clipTime returns t in Unix milliseconds, or false beyond a Date's range.
func clipTime(t time.Time) (int64, bool) {
	return timeClip(float64(t.UnixMilli()))
}

// dateScanner reads a date string from left to right.
type dateScanner struct {
	s string
	i int
}

func (p *dateScanner) done() bool { return p.i == len(p.s) }

// take consumes c if it comes next.
func (p *dateScanner) take(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// digits reads exactly n decimal digits.
func (p *dateScanner) digits(n int) (int, bool) {
	if p.i+n > len(p.s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(p.s[p.i : p.i+n]) {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v, true
}

// year reads YYYY or an expanded ±YYYYYY year (-000000 is not a year).
func (p *dateScanner) year() (int, bool) {
	if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
		neg := p.s[p.i] == '-'
		p.i++
		y, ok := p.digits(6)
		if !ok || (neg && y == 0) {
			return 0, false
		}
		if neg {
			y = -y
		}
		return y, true
	}
	return p.digits(4)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
