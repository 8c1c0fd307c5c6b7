package mapping

import (
	"fmt"
	"math"
	"time"
)

// Microsecond counts.
const (
	usPerSecond = int64(1_000_000)
	usPerDay    = 86_400 * usPerSecond
)

// daysFromCivil returns days since 1970-01-01 of a proleptic Gregorian date,
// with astronomical year numbering (year 0 is 1 BC), as PostgreSQL counts.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

var daysIn = [13]int64{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

type scanner struct {
	s   string
	pos int
}

func (p *scanner) num(minDigits, maxDigits int) (int64, bool) {
	start := p.pos
	var v int64
	for p.pos < len(p.s) && p.pos-start < maxDigits && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		v = v*10 + int64(p.s[p.pos]-'0')
		p.pos++
	}
	return v, p.pos-start >= minDigits
}

func (p *scanner) lit(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *scanner) date() (int64, error) {
	y, ok := p.num(4, 9)
	if !ok || !p.lit('-') {
		return 0, fmt.Errorf("not an ISO date")
	}
	m, ok1 := p.num(2, 2)
	ok2 := p.lit('-')
	d, ok3 := p.num(2, 2)
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn[m] {
		return 0, fmt.Errorf("not an ISO date")
	}
	if len(p.s) >= 3 && p.s[len(p.s)-3:] == " BC" {
		y = 1 - y
	}
	if m == 2 && d == 29 && !isLeap(y) {
		return 0, fmt.Errorf("not a leap year")
	}
	return daysFromCivil(y, m, d), nil
}

// time parses HH:MM:SS[.ffffff] into microseconds since midnight.
func (p *scanner) time() (int64, error) {
	h, ok1 := p.num(2, 2)
	ok2 := p.lit(':')
	mi, ok3 := p.num(2, 2)
	ok4 := p.lit(':')
	s, ok5 := p.num(2, 2)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || mi > 59 || s > 60 {
		return 0, fmt.Errorf("not an ISO time")
	}
	var frac int64
	if p.lit('.') {
		start := p.pos
		f, ok := p.num(1, 6)
		if !ok {
			return 0, fmt.Errorf("not an ISO time")
		}
		for n := p.pos - start; n < 6; n++ {
			f *= 10
		}
		frac = f
	}
	us := ((h*60+mi)*60+s)*usPerSecond + frac
	if h > 24 || us > usPerDay {
		return 0, fmt.Errorf("not an ISO time")
	}
	return us, nil
}

func special(text []byte) error {
	switch string(text) {
	case "infinity", "-infinity":
		return fmt.Errorf("%s has no Iceberg equivalent; by default it is refused (see Edge values in docs/type-mapping.md: map the column to string to keep it)", text)
	}
	return nil
}

// ParseDate parses a date's ISO text form into days since 1970-01-01.
func ParseDate(text []byte) (int32, error) {
	if err := special(text); err != nil {
		return 0, err
	}
	p := scanner{s: string(text)}
	d, err := p.date()
	if err != nil {
		return 0, err
	}
	if rest := p.s[p.pos:]; rest != "" && rest != " BC" {
		return 0, fmt.Errorf("not an ISO date")
	}
	if d < -1<<31 || d > 1<<31-1 {
		return 0, fmt.Errorf("out of range")
	}
	return int32(d), nil
}

// ParseTime parses a time's text form into microseconds since midnight.
// 24:00:00, which PostgreSQL allows, has no Iceberg equivalent.
func ParseTime(text []byte) (int64, error) {
	p := scanner{s: string(text)}
	us, err := p.time()
	if err != nil {
		return 0, err
	}
	if p.pos != len(p.s) {
		return 0, fmt.Errorf("not an ISO time")
	}
	if us >= usPerDay {
		return 0, fmt.Errorf("24:00:00 is outside Iceberg's time range")
	}
	return us, nil
}

var errTimestampRange = fmt.Errorf("out of range for a microsecond timestamp")

// ParseTimestamp parses a timestamp's ISO text form into microseconds since
// 1970-01-01 00:00:00 UTC. With withZone the value must carry a UTC offset
// (timestamptz), which is applied.
func ParseTimestamp(text []byte, withZone bool) (int64, error) {
	if v, ok := usualTimestamp(text, withZone); ok {
		return v, nil
	}
	return scanTimestamp(text, withZone)
}

// scanTimestamp is ParseTimestamp for every form: BC, years beyond 9999,
// 24:00:00, leap seconds, errors.
func scanTimestamp(text []byte, withZone bool) (int64, error) {
	if err := special(text); err != nil {
		return 0, err
	}
	p := scanner{s: string(text)}
	d, err := p.date()
	if err != nil {
		return 0, err
	}
	if !p.lit(' ') {
		return 0, fmt.Errorf("not an ISO timestamp")
	}
	us, err := p.time()
	if err != nil {
		return 0, err
	}
	var offset int64
	if withZone {
		if p.pos >= len(p.s) || (p.s[p.pos] != '+' && p.s[p.pos] != '-') {
			return 0, fmt.Errorf("timestamptz without a UTC offset")
		}
		sign := int64(1)
		if p.s[p.pos] == '-' {
			sign = -1
		}
		p.pos++
		h, ok := p.num(2, 2)
		if !ok {
			return 0, fmt.Errorf("bad UTC offset")
		}
		secs := h * 3600
		if p.lit(':') {
			m, ok := p.num(2, 2)
			if !ok || m > 59 {
				return 0, fmt.Errorf("bad UTC offset")
			}
			secs += m * 60
			if p.lit(':') {
				s, ok := p.num(2, 2)
				if !ok || s > 59 {
					return 0, fmt.Errorf("bad UTC offset")
				}
				secs += s
			}
		}
		offset = sign * secs * usPerSecond
	}
	if rest := p.s[p.pos:]; rest != "" && rest != " BC" {
		return 0, fmt.Errorf("not an ISO timestamp")
	}
	// Microseconds since the epoch must fit an int64 (about ±292,000 years).
	if d > math.MaxInt64/usPerDay || d < math.MinInt64/usPerDay {
		return 0, errTimestampRange
	}
	base, delta := d*usPerDay, us-offset
	v := base + delta
	if (delta > 0 && v < base) || (delta < 0 && v > base) {
		return 0, errTimestampRange
	}
	return v, nil
}

// usualTimestamp reads the usual form of a timestamp at fixed positions:
// "YYYY-MM-DD HH:MM:SS[.f{1,6}]", then with withZone "+HH[:MM[:SS]]" (or
// '-'), AD, a valid date and a time before 24:00:00. ok is false for
// anything else, which the scanner reads (or refuses) as ParseTimestamp
// always has: the values read here are the ones it reads.
func usualTimestamp(t []byte, withZone bool) (v int64, ok bool) {
	if len(t) < 19 || t[4] != '-' || t[7] != '-' || t[10] != ' ' || t[13] != ':' || t[16] != ':' {
		return 0, false
	}
	two := func(i int) int64 {
		a, b := t[i]-'0', t[i+1]-'0'
		if a > 9 || b > 9 {
			ok = false
		}
		return int64(a)*10 + int64(b)
	}
	ok = true
	y := two(0)*100 + two(2)
	m, d := two(5), two(8)
	h, mi, sec := two(11), two(14), two(17)
	if !ok || m < 1 || m > 12 || d < 1 || d > daysIn[m] || (m == 2 && d == 29 && !isLeap(y)) || h > 23 || mi > 59 || sec > 59 {
		return 0, false
	}
	p := 19
	var frac int64
	if p < len(t) && t[p] == '.' {
		p++
		n := 0
		for ; n < 6 && p < len(t) && t[p] >= '0' && t[p] <= '9'; n++ {
			frac = frac*10 + int64(t[p]-'0')
			p++
		}
		if n == 0 {
			return 0, false
		}
		for ; n < 6; n++ {
			frac *= 10
		}
	}
	var offset int64
	if withZone {
		if p+3 > len(t) || (t[p] != '+' && t[p] != '-') {
			return 0, false
		}
		secs := two(p+1) * 3600
		for q := p + 3; q < len(t) && q < p+9; q += 3 { // :MM, then :SS
			if t[q] != ':' || q+3 > len(t) {
				return 0, false
			}
			x := two(q + 1)
			if x > 59 {
				return 0, false
			}
			if q == p+3 {
				secs += x * 60
			} else {
				secs += x
			}
		}
		if !ok {
			return 0, false
		}
		if t[p] == '-' {
			secs = -secs
		}
		offset = secs * usPerSecond
		p = min(len(t), p+9)
	}
	if p != len(t) {
		return 0, false
	}
	us := ((h*60+mi)*60+sec)*usPerSecond + frac
	return daysFromCivil(y, m, d)*usPerDay + us - offset, true
}

// WallToUTC turns a wall-clock timestamp in loc (microseconds since the
// epoch as if loc were UTC) into microseconds since the epoch, the way
// PostgreSQL reads a timestamp in a time zone: a time that does not exist
// (skipped by a forward jump) takes the UTC offset in force before the
// jump; an ambiguous one (repeated by a backward jump) the offset after it.
func WallToUTC(wall int64, loc *time.Location) int64 {
	const day = 24 * 3600 * usPerSecond
	type period struct {
		off        int64 // µs east of UTC
		start, end int64 // µs; math.MinInt64/MaxInt64 when unbounded
	}
	// The zone periods around the wall time, oldest first.
	var ps []period
	t := time.UnixMicro(satSub(wall, 2*day)).In(loc)
	for {
		_, off := t.Zone()
		s, e := t.ZoneBounds()
		p := period{off: int64(off) * usPerSecond, start: math.MinInt64, end: math.MaxInt64}
		if !s.IsZero() {
			p.start = s.UnixMicro()
		}
		if !e.IsZero() {
			p.end = e.UnixMicro()
		}
		ps = append(ps, p)
		if p.end == math.MaxInt64 || p.end > satAdd(wall, 2*day) || len(ps) > 8 {
			break
		}
		t = time.UnixMicro(p.end).In(loc)
	}
	// The latest period the wall time exists in (the later offset when
	// ambiguous).
	for i := len(ps) - 1; i >= 0; i-- {
		if u := satSub(wall, ps[i].off); u >= ps[i].start && u < ps[i].end {
			return u
		}
	}
	// In a gap: the offset of the period before the jump, the last one
	// whose offset puts the time at or after its end.
	for i := len(ps) - 1; i >= 0; i-- {
		if u := satSub(wall, ps[i].off); u >= ps[i].end {
			return u
		}
	}
	return satSub(wall, ps[0].off)
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

func satSub(a, b int64) int64 {
	if b == math.MinInt64 {
		return satAdd(a, math.MaxInt64)
	}
	return satAdd(a, -b)
}
