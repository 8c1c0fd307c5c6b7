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
			if !s.keptUnsure(mirrorTable(m), len(m.closed)) {
				for _, df := range m.closed {
					removeFile(m.fs, df.FilePath())
				}
			}
			m.closed, m.deletes, m.changes = nil, nil, 0
		}
		if c := st.changelog; c != nil {
			for _, fw := range c.files {
				fw.abort()
			}
			if !s.keptUnsure(changelogTable(c), len(c.closed)) {
				for _, df := range c.closed {
					removeFile(c.fs, df.FilePath())
				}
			}
			clear(c.files)
			c.closed, c.changes = nil, 0
		}
	}
	s.txOpen, s.pending = false, 0
}

// keptUnsure says whether t's closed files (n of them) stay because a
// commit of them has an unknown outcome, and logs it.
func (s *Sink) keptUnsure(t *icebergTable, n int) bool {
	if t == nil || !t.unsure || n == 0 {
		return false
	}
	s.log.Warn("files of a commit whose outcome is unknown are kept; orphan file cleanup removes them if no commit references them", "table", t.name(), "files", n)
	return true
}
