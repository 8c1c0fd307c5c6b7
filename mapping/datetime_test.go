package mapping_test

import (
	"fmt"
	"math"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// Expected values marked "PG" were read from PostgreSQL 15:
//   SELECT d - date '1970-01-01'
//   SELECT extract(epoch FROM ts) * 1000000

func TestParseDate(t *testing.T) {
	tests := []struct {
		in      string
		want    int32
		wantErr bool
	}{
		{in: "1970-01-01", want: 0},
		{in: "1969-12-31", want: -1},
		{in: "2000-01-01", want: 10957},
		{in: "2000-02-29", want: 11016},         // PG
		{in: "1600-02-29", want: -135081},       // PG
		{in: "1900-03-01", want: -25508},        // PG
		{in: "0001-01-01", want: -719162},       // PG
		{in: "9999-12-31", want: 2932896},       // PG
		{in: "10000-01-01", want: 2932897},      // PG
		{in: "5874897-12-31", want: 2145042905}, // PG: the last date
		{in: "0001-12-31 BC", want: -719163},    // PG: astronomical year 0
		{in: "0001-01-01 BC", want: -719528},    // PG
		{in: "0001-02-29 BC", want: -719469},    // PG: 1 BC is a leap year
		{in: "0005-02-29 BC", want: -720930},    // PG: so is 5 BC (year -4)
		{in: "0401-02-29 BC", want: -865566},    // PG: 401 BC is year -400
		{in: "0101-03-01 BC", want: -755993},    // PG
		{in: "4713-11-24 BC", want: -2440222},   // PG: the first date
		{in: "1900-02-29", wantErr: true},       // not a leap year
		{in: "2100-02-29", wantErr: true},       // not a leap year
		{in: "0004-02-29 BC", wantErr: true},    // year -3
		{in: "0100-02-29 BC", wantErr: true},    // year -99
		{in: "0400-02-29 BC", wantErr: true},    // year -399
		{in: "2001-02-29", wantErr: true},
		{in: "2000-04-31", wantErr: true},
		{in: "2000-13-01", wantErr: true},
		{in: "2000-00-01", wantErr: true},
		{in: "2000-01-00", wantErr: true},
		{in: "2000-01-32", wantErr: true},
		{in: "infinity", wantErr: true},
		{in: "-infinity", wantErr: true},
		{in: "", wantErr: true},
		{in: "200-01-01", wantErr: true},
		{in: "2000-1-01", wantErr: true},
		{in: "2000-01-1", wantErr: true},
		{in: "2000/01/01", wantErr: true},
		{in: "2000-01-01 ", wantErr: true},
		{in: "2000-01-01 AD", wantErr: true},
		{in: "2000-01-01BC", wantErr: true},
		{in: "2000-01-01 00:00:00", wantErr: true},
		{in: "-2000-01-01", wantErr: true},
		{in: "9999999999-01-01", wantErr: true},
		{in: "999999999-12-31", wantErr: true}, // beyond int32 days
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := mapping.ParseDate([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Errorf("ParseDate(%q) = %d, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseDate(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

// pgDate formats a date as PostgreSQL does with DateStyle ISO. Go's time
// uses astronomical years (year 0 is 1 BC), like PostgreSQL internally.
func pgDate(tm time.Time) string {
	y := tm.Year()
	suffix := ""
	if y <= 0 {
		y, suffix = 1-y, " BC"
	}
	return fmt.Sprintf("%04d-%02d-%02d%s", y, tm.Month(), tm.Day(), suffix)
}

// pgTimestamp formats a timestamp as PostgreSQL does (DateStyle ISO):
// fraction without trailing zeros, offset as +HH[:MM[:SS]], then BC.
func pgTimestamp(tm time.Time, withZone bool) string {
	y := tm.Year()
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	s := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", y, tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second())
	if us := tm.Nanosecond() / 1000; us != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", us), "0")
	}
	if withZone {
		_, off := tm.Zone()
		sign := "+"
		if off < 0 {
			sign, off = "-", -off
		}
		s += fmt.Sprintf("%s%02d", sign, off/3600)
		if off%3600 != 0 {
			s += fmt.Sprintf(":%02d", off/60%60)
			if off%60 != 0 {
				s += fmt.Sprintf(":%02d", off%60)
			}
		}
	}
	if bc {
		s += " BC"
	}
	return s
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// TestParseDateMatchesGoTime checks every day from 4713 BC to AD 2600, and
// every 97th day up to AD 12000, against Go's proleptic Gregorian calendar.
func TestParseDateMatchesGoTime(t *testing.T) {
	start := time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC)
	if got := pgDate(start); got != "4713-11-24 BC" {
		t.Fatalf("pgDate(%v) = %q, want 4713-11-24 BC", start, got)
	}
	fails := 0
	check := func(tm time.Time) {
		text := pgDate(tm)
		want := floorDiv(tm.Unix(), 86400)
		got, err := mapping.ParseDate([]byte(text))
		if err != nil || int64(got) != want {
			t.Errorf("ParseDate(%q) = %d, %v; want %d", text, got, err, want)
			fails++
		}
	}
	for tm := start; tm.Year() < 2600 && fails < 10; tm = tm.AddDate(0, 0, 1) {
		check(tm)
	}
	for tm := time.Date(2600, 1, 1, 0, 0, 0, 0, time.UTC); tm.Year() < 12000 && fails < 10; tm = tm.AddDate(0, 0, 97) {
		check(tm)
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "00:00:00", want: 0},
		{in: "00:00:01", want: 1_000_000},
		{in: "12:34:56", want: (12*3600 + 34*60 + 56) * 1_000_000},
		{in: "23:59:59", want: 86_399_000_000},
		{in: "23:59:59.999999", want: 86_399_999_999},
		{in: "00:00:00.000001", want: 1},
		{in: "12:00:00.1", want: 43_200_100_000},
		{in: "12:00:00.12", want: 43_200_120_000},
		{in: "12:00:00.123", want: 43_200_123_000},
		{in: "12:00:00.1234", want: 43_200_123_400},
		{in: "12:00:00.12345", want: 43_200_123_450},
		{in: "12:00:00.123456", want: 43_200_123_456},
		{in: "12:00:00.050", want: 43_200_050_000},
		{in: "12:00:00.1234567", wantErr: true}, // would need rounding
		{in: "12:00:00.", wantErr: true},
		{in: "24:00:00", wantErr: true}, // valid in PostgreSQL, not in Iceberg
		{in: "24:00:00.000001", wantErr: true},
		{in: "25:00:00", wantErr: true},
		{in: "99:00:00", wantErr: true},
		{in: "23:60:00", wantErr: true},
		{in: "23:59:61", wantErr: true},
		{in: "1:00:00", wantErr: true},
		{in: "12:00", wantErr: true},
		{in: "12:00:00 ", wantErr: true},
		{in: "12:00:00+00", wantErr: true}, // timetz
		{in: "", wantErr: true},
		{in: "allballs", wantErr: true},
		{in: "-01:00:00", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := mapping.ParseTime([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Errorf("ParseTime(%q) = %d, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseTime(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseTimeMatchesGoTime(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		us := r.Int63n(86_400_000_000)
		if i < 6 {
			us = []int64{0, 1, 999_999, 1_000_000, 86_399_999_999, 43_200_000_000}[i]
		}
		tm := time.UnixMicro(us).UTC()
		text := tm.Format("15:04:05.999999")
		got, err := mapping.ParseTime([]byte(text))
		if err != nil || got != us {
			t.Fatalf("ParseTime(%q) = %d, %v; want %d", text, got, err, us)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		in       string
		withZone bool
		want     int64
		wantErr  bool
	}{
		{in: "1970-01-01 00:00:00", want: 0},
		{in: "1970-01-01 00:00:00+00", withZone: true, want: 0},
		{in: "2000-01-01 00:00:00", want: 946_684_800_000_000},
		{in: "1969-12-31 23:59:59.999999", want: -1},                                     // PG
		{in: "2000-01-01 24:00:00", want: 946_771_200_000_000},                           // PG reads it as the next midnight
		{in: "10000-01-01 00:00:00", want: 253_402_300_800_000_000},                      // PG
		{in: "0001-01-01 00:00:00 BC", want: -62_167_219_200_000_000},                    // PG
		{in: "0001-01-01 00:00:00+00 BC", withZone: true, want: -62_167_219_200_000_000}, // PG
		{in: "0001-12-31 23:59:59.5 BC", want: -62_135_596_800_500_000},                  // PG
		{in: "4713-11-24 00:00:00 BC", want: -210_835_180_800_000_000},                   // PG: the first timestamp
		{in: "2000-02-29 12:34:56.789", want: 951_827_696_789_000},
		{in: "2000-02-29 12:34:56.000001", want: 951_827_696_000_001},
		// PostgreSQL's text forms of 2024-06-01 12:00:00 UTC in other zones.
		{in: "2024-06-01 17:30:00+05:30", withZone: true, want: 1_717_243_200_000_000},     // Asia/Kolkata
		{in: "2024-06-01 09:00:00-03", withZone: true, want: 1_717_243_200_000_000},        // America/Sao_Paulo
		{in: "1900-06-01 12:19:32+00:19:32", withZone: true, want: -2_195_899_200_000_000}, // Europe/Amsterdam LMT
		{in: "1900-06-01 11:40:28-00:19:32", withZone: true, want: -2_195_899_200_000_000},
		{in: "1999-12-31 18:29:59.999999+00", withZone: true, want: 946_664_999_999_999},
		{in: "2000-01-01 05:30:00+05:30 BC", withZone: true, want: -125_249_500_800_000_000},
		// The largest value an int64 of microseconds holds.
		{in: "294247-01-10 04:00:54.775807", want: math.MaxInt64},
		{in: "294247-01-10 04:00:54.775807+00", withZone: true, want: math.MaxInt64},
		// Valid PostgreSQL timestamps beyond Iceberg's range must fail, not wrap.
		{in: "294247-01-10 04:00:54.775808", wantErr: true},
		{in: "294276-12-31 23:59:59.999999", wantErr: true},
		{in: "294276-12-31 23:59:59.999999+00", withZone: true, wantErr: true},
		{in: "294247-01-10 04:00:54.775807-01", withZone: true, wantErr: true},
		{in: "999999999-12-31 23:59:59 BC", wantErr: true},
		{in: "infinity", wantErr: true},
		{in: "-infinity", wantErr: true},
		{in: "infinity", withZone: true, wantErr: true},
		{in: "2000-01-01 00:00:00", withZone: true, wantErr: true},   // timestamptz without an offset
		{in: "2000-01-01 00:00:00+00", wantErr: true},                // an offset on a timestamp
		{in: "2000-01-01 00:00:00+5", withZone: true, wantErr: true}, // one-digit hour
		{in: "2000-01-01 00:00:00+05:3", withZone: true, wantErr: true},
		{in: "2000-01-01 00:00:00+05:", withZone: true, wantErr: true},
		{in: "2000-01-01 00:00:00+05:30:", withZone: true, wantErr: true},
		{in: "2000-01-01 00:00:00+00:70", withZone: true, wantErr: true},
		{in: "2000-01-01 00:00:00+00:30:60", withZone: true, wantErr: true},
		{in: "2000-01-01 00:00:00.1234567", wantErr: true},
		{in: "2000-01-01T00:00:00", wantErr: true},
		{in: "2000-01-01  00:00:00", wantErr: true},
		{in: "2000-01-01", wantErr: true},
		{in: "2000-02-30 00:00:00", wantErr: true},
		{in: "1900-02-29 00:00:00", wantErr: true},
		{in: "2000-01-01 00:60:00", wantErr: true},
		{in: "2000-01-01 25:00:00", wantErr: true},
		{in: "2000-01-01 00:00:00 AD", wantErr: true},
		{in: "2000-01-01 00:00:00 bc", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/zone=%t", tt.in, tt.withZone), func(t *testing.T) {
			got, err := mapping.ParseTimestamp([]byte(tt.in), tt.withZone)
			if tt.wantErr {
				if err == nil {
					t.Errorf("ParseTimestamp(%q, %t) = %d, want an error", tt.in, tt.withZone, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseTimestamp(%q, %t) = %d, %v; want %d", tt.in, tt.withZone, got, err, tt.want)
			}
		})
	}
}

// TestParseTimestampMatchesGoTime checks random instants from 4713 BC to
// AD 12000 in PostgreSQL's text form, in UTC and with offsets.
func TestParseTimestampMatchesGoTime(t *testing.T) {
	lo := time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC).UnixMicro()
	hi := time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	offsets := []int{0, 5*3600 + 30*60, -3 * 3600, 19*60 + 32, -(9*3600 + 30*60 + 15), 14 * 3600, -12 * 3600}
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 50000; i++ {
		us := lo + r.Int63n(hi-lo)
		switch r.Intn(4) {
		case 0:
			us -= us % 1_000_000 // whole seconds
		case 1:
			us -= us % 86_400_000_000 // midnights
		}
		off := offsets[r.Intn(len(offsets))]
		tm := time.UnixMicro(us).In(time.FixedZone("", off))
		withZone := i%2 == 0
		if !withZone {
			tm = time.UnixMicro(us).UTC()
		}
		text := pgTimestamp(tm, withZone)
		got, err := mapping.ParseTimestamp([]byte(text), withZone)
		if err != nil || got != us {
			t.Fatalf("ParseTimestamp(%q, %t) = %d, %v; want %d (%s)", text, withZone, got, err, us, tm.UTC())
		}
	}
}

// isoTimestamp matches the text forms ParseTimestamp must read (and, with
// the offset group, timestamptz).
var isoTimestamp = regexp.MustCompile(`^(\d{4,9})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::(\d\d)(?::(\d\d))?)?)?( BC)?$`)

var isoDate = regexp.MustCompile(`^(\d{4,9})-(\d\d)-(\d\d)( BC)?$`)

// civil returns the days since 1970 of a date by Go's calendar, and whether
// the date exists.
func civil(year, month, day int64, bc bool) (int64, bool) {
	if bc {
		year = 1 - year
	}
	if month < 1 || month > 12 || day < 1 || day > 31 {
		return 0, false
	}
	tm := time.Date(int(year), time.Month(month), int(day), 0, 0, 0, 0, time.UTC)
	if int64(tm.Year()) != year || int64(tm.Month()) != month || int64(tm.Day()) != day {
		return 0, false
	}
	return floorDiv(tm.Unix(), 86400), true
}

func atoi(s string) int64 {
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func FuzzParseDate(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		got, err := mapping.ParseDate([]byte(text))
		m := isoDate.FindStringSubmatch(text)
		if m == nil {
			if err == nil {
				t.Fatalf("ParseDate(%q) = %d, want an error for a malformed date", text, got)
			}
			return
		}
		if atoi(m[1]) == 0 {
			return // year 0 is not a PostgreSQL year; either answer will do
		}
		days, ok := civil(atoi(m[1]), atoi(m[2]), atoi(m[3]), m[4] != "")
		if !ok || days < math.MinInt32 || days > math.MaxInt32 {
			if err == nil {
				t.Fatalf("ParseDate(%q) = %d, want an error", text, got)
			}
			return
		}
		if err != nil || int64(got) != days {
			t.Fatalf("ParseDate(%q) = %d, %v; want %d", text, got, err, days)
		}
	})
}

func FuzzParseTimestamp(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string, withZone bool) {
		got, err := mapping.ParseTimestamp([]byte(text), withZone)
		m := isoTimestamp.FindStringSubmatch(text)
		if m == nil || (m[8] != "") != withZone {
			if err == nil {
				t.Fatalf("ParseTimestamp(%q, %t) = %d, want an error for a malformed value", text, withZone, got)
			}
			return
		}
		if atoi(m[1]) == 0 {
			return // year 0 is not a PostgreSQL year
		}
		days, ok := civil(atoi(m[1]), atoi(m[2]), atoi(m[3]), m[12] != "")
		h, mi, s := atoi(m[4]), atoi(m[5]), atoi(m[6])
		if !ok || h > 24 || mi > 59 || s > 60 {
			if err == nil {
				t.Fatalf("ParseTimestamp(%q, %t) = %d, want an error", text, withZone, got)
			}
			return
		}
		frac := m[7]
		us := atoi(frac + strings.Repeat("0", 6-len(frac)))
		tod := ((h*60+mi)*60+s)*1_000_000 + us
		if tod > 86_400_000_000 {
			if err == nil {
				t.Fatalf("ParseTimestamp(%q, %t) = %d, want an error", text, withZone, got)
			}
			return
		}
		if atoi(m[10]) > 59 || atoi(m[11]) > 59 {
			// PostgreSQL never prints such an offset.
			if err == nil {
				t.Fatalf("ParseTimestamp(%q, %t) = %d, want an error for offset minutes or seconds over 59", text, withZone, got)
			}
			return
		}
		off := (atoi(m[9])*3600 + atoi(m[10])*60 + atoi(m[11])) * 1_000_000
		if m[8] == "-" {
			off = -off
		}
		// want = days*86400e6 + tod - off, unless that leaves int64.
		want, fits := mulAddFits(days, 86_400_000_000, tod-off)
		if !fits {
			if err == nil {
				t.Fatalf("ParseTimestamp(%q, %t) = %d, want an out-of-range error", text, withZone, got)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("ParseTimestamp(%q, %t) = %d, %v; want %d", text, withZone, got, err, want)
		}
	})
}

// mulAddFits returns a*b+c and whether it fits in an int64.
func mulAddFits(a, b, c int64) (int64, bool) {
	if a != 0 && (a > math.MaxInt64/b || a < math.MinInt64/b) {
		return 0, false
	}
	p := a * b
	if (c > 0 && p > math.MaxInt64-c) || (c < 0 && p < math.MinInt64-c) {
		return 0, false
	}
	return p + c, true
}

func TestWallToUTC(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	rome, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Fatal(err)
	}
	// Expected values are PostgreSQL's: SELECT ('<wall>'::timestamp AT TIME ZONE '<zone>') AT TIME ZONE 'UTC'.
	for _, tc := range []struct {
		wall string
		loc  *time.Location
		want string
	}{
		{"2024-01-15 12:00:00", ny, "2024-01-15 17:00:00"},
		{"2024-07-15 12:00:00.123456", ny, "2024-07-15 16:00:00.123456"},
		// Skipped by the spring-forward jump: the offset before it (EST).
		{"2018-03-11 02:30:00", ny, "2018-03-11 07:30:00"},
		// Repeated by the fall-back jump: the offset after it (EST).
		{"2018-11-04 01:30:00", ny, "2018-11-04 06:30:00"},
		{"2018-11-04 00:59:59", ny, "2018-11-04 04:59:59"},
		{"2018-11-04 02:00:00", ny, "2018-11-04 07:00:00"},
		{"2024-01-15 12:00:00", kolkata, "2024-01-15 06:30:00"},
		{"2024-01-15 12:00:00", time.UTC, "2024-01-15 12:00:00"},
		{"3000-06-01 00:00:00", ny, "3000-06-01 04:00:00"},
		// Before the zone's first transition: local mean time.
		{"1800-01-01 00:00:00", ny, "1800-01-01 04:56:02"},
		{"0044-03-15 12:00:00 BC", rome, "0044-03-15 11:10:04 BC"},
	} {
		wall, err := mapping.ParseTimestamp([]byte(tc.wall), false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := mapping.ParseTimestamp([]byte(tc.want), false)
		if err != nil {
			t.Fatal(err)
		}
		if got := mapping.WallToUTC(wall, tc.loc); got != want {
			t.Errorf("WallToUTC(%s, %s) = %s, want %s", tc.wall, tc.loc, time.UnixMicro(got).UTC(), tc.want)
		}
	}
}
