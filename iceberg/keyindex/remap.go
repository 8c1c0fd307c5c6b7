package keyindex

import "errors"

// Remap moves the live rows of rewritten files to where a compaction put
// them, without reading any file: moved[f][p] is the new location of row p
// of file f (File -1: the rewrite dropped the row, deleted as of the
// snapshot it read). Rows of files not in moved stay. The rows it moves
// are collected first, then set, so iterating never races a table growing.
//
// It reports false, having changed nothing, when a live row of a rewritten
// file has no new location (the index and the rewrite disagree: the caller
// rebuilds the index), or when keys may repeat (a whole-row key: Set
// would add a row, not move one).
func (x *Index) Remap(moved map[int32][]Loc) (n int, ok bool) {
	if len(moved) == 0 {
		return 0, true
	}
	if x.repeats {
		return 0, false
	}
	var keys Keys
	var locs []Loc
	agree := true
	visit := func(k []byte, l Loc) bool {
		to, in := moved[l.File]
		if !in {
			return true
		}
		if l.Pos >= int64(len(to)) || to[l.Pos].File < 0 {
			agree = false
			return false
		}
		keys.Push(append(keys.Tail(), k...))
		locs = append(locs, to[l.Pos])
		return true
	}
	if x.Spilled() {
		errStop := errors.New("stop")
		err := x.eachLive(func(k []byte, l Loc) error {
			if !visit(k, l) {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			x.disk.err = err
			return 0, false
		}
	} else {
		for k, l := range x.All() {
			if !visit(k, l) {
				break
			}
		}
	}
	if !agree {
		return 0, false
	}
	for i, l := range locs {
		x.Set(string(keys.Key(i)), l)
	}
	return len(locs), true
}
