package mapping

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// Interval is PostgreSQL's interval: months, days and microseconds, kept
// apart because a month or a day has no fixed length.
type Interval struct {
	Months int32
	Days   int32
	Micros int64
}

// Infinite intervals (PostgreSQL 17), as PostgreSQL stores them.
var (
	IntervalInfinity    = Interval{math.MaxInt32, math.MaxInt32, math.MaxInt64}
	IntervalNegInfinity = Interval{math.MinInt32, math.MinInt32, math.MinInt64}
)

var errInterval = errors.New("not an interval in IntervalStyle postgres")

// ParseInterval reads an interval's text output form with IntervalStyle
// postgres:
//
//	1 year 2 mons 3 days 04:05:06.789   -1 days +02:00:00   00:00:00
//	-178956970 years -8 mons   infinity
//
// Each of years, mons and days appears at most once, in that order, then
// an optional [+-]HH:MM:SS[.ffffff] with any number of hour digits; the
// time part is there when nothing else is.
func ParseInterval(text []byte) (Interval, error) {
	switch string(text) {
	case "infinity":
		return IntervalInfinity, nil
	case "-infinity":
		return IntervalNegInfinity, nil
	}
	var months, days int64
	var micros int64
	unitRank := 0 // 1 year, 2 mon, 3 day: each must follow the previous
	parts := bytes.Split(text, []byte{' '})
	seen := false
	for i := 0; i < len(parts); i++ {
		tok := parts[i]
		if bytes.IndexByte(tok, ':') >= 0 {
			if i != len(parts)-1 {
				return Interval{}, errInterval
			}
			us, err := parseIntervalTime(tok)
			if err != nil {
				return Interval{}, err
			}
			micros = us
			seen = true
			continue
		}
		if i+1 >= len(parts) {
			return Interval{}, errInterval
		}
		n, err := parseSignedInt(tok)
		if err != nil {
			return Interval{}, errInterval
		}
		i++
		rank := 0
		switch string(parts[i]) {
		case "year", "years":
			rank = 1
		case "mon", "mons":
			rank = 2
		case "day", "days":
			rank = 3
		default:
			return Interval{}, errInterval
		}
		if rank <= unitRank {
			return Interval{}, errInterval
		}
		unitRank = rank
		switch rank {
		case 1:
			if n > math.MaxInt32/12+1 || n < math.MinInt32/12-1 {
				return Interval{}, errors.New("interval out of range")
			}
			months += n * 12
		case 2:
			if n > math.MaxInt32 || n < math.MinInt32 {
				return Interval{}, errors.New("interval out of range")
			}
			months += n
		case 3:
			days = n
		}
		seen = true
	}
	if !seen {
		return Interval{}, errInterval
	}
	if months > math.MaxInt32 || months < math.MinInt32 || days > math.MaxInt32 || days < math.MinInt32 {
		return Interval{}, errors.New("interval out of range")
	}
	// The extremes are PostgreSQL 17's ±infinity, and finite intervals
	// before it: the same bits either way.
	return Interval{Months: int32(months), Days: int32(days), Micros: micros}, nil
}

// parseSignedInt reads [+-]digits, at most 10 digits (enough for int32).
func parseSignedInt(b []byte) (int64, error) {
	s := b
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 10 {
		return 0, errInterval
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errInterval
		}
	}
	return strconv.ParseInt(string(b), 10, 64)
}

// parseIntervalTime reads [+-]HH:MM:SS[.ffffff] into microseconds.
func parseIntervalTime(b []byte) (int64, error) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	hs, rest, ok1 := bytes.Cut(b, []byte{':'})
	ms, ss, ok2 := bytes.Cut(rest, []byte{':'})
	if !ok1 || !ok2 || len(hs) < 2 || len(hs) > 10 || len(ms) != 2 || len(ss) < 2 {
		return 0, errInterval
	}
	secs, frac, hasFrac := bytes.Cut(ss, []byte{'.'})
	if len(secs) != 2 || (hasFrac && (len(frac) < 1 || len(frac) > 6)) {
		return 0, errInterval
	}
	digits := func(d []byte) (int64, bool) {
		var v int64
		for _, c := range d {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int64(c-'0')
		}
		return v, true
	}
	h, okH := digits(hs)
	m, okM := digits(ms)
	s, okS := digits(secs)
	f, okF := digits(frac)
	if !okH || !okM || !okS || !okF || m > 59 || s > 59 {
		return 0, errInterval
	}
	for n := len(frac); n < 6; n++ {
		f *= 10
	}
	const usPerHour = 3_600_000_000
	rest64 := ((m*60)+s)*usPerSecond + f // below one hour
	// |h*usPerHour + rest| must fit int64; the negative side reaches one
	// microsecond further.
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	if uint64(h) > (limit-uint64(rest64))/usPerHour {
		return 0, errors.New("interval out of range")
	}
	mag := uint64(h)*usPerHour + uint64(rest64)
	if neg {
		return int64(-mag), nil // -2^63 wraps to itself, as wanted
	}
	return int64(mag), nil
}
