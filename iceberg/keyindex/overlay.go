package keyindex

// Overlay is an index as a speculation sees it (a streamed transaction
// applied ahead of its commit): its own changes in over (a deletion as
// tombstone), the rest from base, which it leaves alone until Merge.
type Overlay struct {
	base *Index
	over *Index
}

// NewOverlay returns an empty overlay on base.
func NewOverlay(base *Index) *Overlay { return &Overlay{base: base, over: New()} }

// tombstone marks a key deleted in an overlay: a file id no index reaches.
const tombstone = 1<<(64-posBits) - 1

// Get returns the location of key k: the overlay's, else the base's.
func (o *Overlay) Get(k string) (Loc, bool) {
	if l, ok := o.over.Get(k); ok {
		return l, l.File != tombstone
	}
	return o.base.Get(k)
}

// Set records key k's row at l in the overlay.
func (o *Overlay) Set(k string, l Loc) { o.over.Set(k, l) }

// Del deletes key k in the overlay.
func (o *Overlay) Del(k string) { o.over.Set(k, Loc{File: tombstone}) }

// Merge applies the overlay to the base index and empties it.
func (o *Overlay) Merge() {
	for k, l := range o.over.All() {
		if l.File == tombstone {
			o.base.DelBytes(k)
		} else {
			o.base.Add(k, l)
		}
	}
	o.over.Clear()
}
