package iceberg

// Discard drops everything the sink holds that is not committed: the open
// transaction, the batch since the last flush, a transaction applied ahead
// of its commit, copies in progress and compactions in flight, deleting
// the files written for them. Nothing of it is committed or acknowledged
// after; the sink is not used again. The bridge discards its sink when a
// connection is lost inside a transaction, and resumes from what is
// durable with a new one, as a restart would (see bridge.run).
func (s *Sink) Discard() {
	s.SpecAbandon("the sink is discarded")
	s.stopCompactions()
	s.copyMu.Lock()
	copying := make([]uint32, 0, len(s.copying)+len(s.runs))
	for id := range s.copying {
		copying = append(copying, id)
	}
	for id := range s.runs {
		copying = append(copying, id)
	}
	s.copyMu.Unlock()
	for _, id := range copying {
		s.AbortCopy(id)
	}
	for _, st := range s.tables {
		if m := st.mirror; m != nil {
			m.abortOpen() // every partition's open file
			for _, df := range m.closed {
				removeFile(m.fs, df.FilePath())
			}
			m.closed, m.deletes, m.changes = nil, nil, 0
		}
		if c := st.changelog; c != nil {
			for _, fw := range c.files {
				fw.abort()
			}
			for _, df := range c.closed {
				removeFile(c.fs, df.FilePath())
			}
			clear(c.files)
			c.closed, c.changes = nil, 0
		}
	}
	s.txOpen, s.pending = false, 0
}
