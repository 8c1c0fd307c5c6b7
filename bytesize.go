package main

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// byteUnits are the units parseBytes accepts, matched without regard to
// case: SI units are powers of 1000 (1GB = 10^9 bytes), IEC units powers
// of 1024 (1GiB = 2^30 bytes), as their standards define them.
var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// minMemoryLimit is the smallest --memory-limit taken: below it the
// garbage collector would run all the time, and a smaller value is almost
// always a missing or mistyped unit (512 for 512MiB).
const minMemoryLimit = 16 << 20

var byteSize = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) ?([A-Za-z]*)$`)

// parseBytes reads a --memory-limit: a number (decimals allowed) and a unit
// (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; bytes without one).
func parseBytes(s string) (int64, error) {
	n, err := parseSize("memory limit", s)
	if err != nil {
		return 0, err
	}
	if n < minMemoryLimit {
		return 0, fmt.Errorf("memory limit %q is %d bytes, too small (at least 16MiB): write the unit, e.g. 512MiB", s, n)
	}
	return n, nil
}

// parseSize reads a size as parseBytes does, without its least value;
// what names the setting in errors.
func parseSize(what, s string) (int64, error) {
	m := byteSize.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%s %q: write a size like 512MiB or 2GiB", what, s)
	}
	mult, ok := byteUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("%s %q: unit %q is not one of B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)", what, s, m[2])
	}
	n, _ := new(big.Rat).SetString(m[1]) // the pattern admits only decimals
	n.Mul(n, new(big.Rat).SetInt64(mult))
	b := new(big.Int).Quo(n.Num(), n.Denom())
	if !b.IsInt64() {
		return 0, fmt.Errorf("%s %q is too large", what, s)
	}
	return b.Int64(), nil
}
