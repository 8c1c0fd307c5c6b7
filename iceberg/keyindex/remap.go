package keyindex

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
	for k, l := range x.All() {
		to, in := moved[l.File]
		if !in {
			continue
		}
		if l.Pos >= int64(len(to)) || to[l.Pos].File < 0 {
			return 0, false
		}
		keys.Push(append(keys.Tail(), k...))
		locs = append(locs, to[l.Pos])
	}
	for i, l := range locs {
		x.Set(string(keys.Key(i)), l)
	}
	return len(locs), true
}
