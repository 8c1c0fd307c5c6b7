package replication

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	p := &Progress{}
	now := time.Now()
	check := func(what string, at time.Time, wantOK bool, want string) {
		t.Helper()
		ok, reason := p.Health(at)
		if ok != wantOK || !strings.HasPrefix(reason, want) {
			t.Errorf("%s: Health = %t, %q; want %t, %q...", what, ok, reason, wantOK, want)
		}
	}
	check("before anything", now, false, "starting")
	p.SetPhase(PhaseCopying, "the initial copy")
	check("copying", now, true, "copying: the initial copy")
	p.SetPhase(PhaseStreaming, "")
	check("streaming", time.Now(), true, "streaming: acknowledged 0/0, last standby status 0s ago")
	check("streaming, no status for long", time.Now().Add(HealthStall+time.Second), false, "stalled: no standby status sent to PostgreSQL for 2m1s")
	p.lastStatus.Store(time.Now().Add(time.Hour).UnixNano()) // a status sent (clock of the check)
	check("streaming after a status", time.Now().Add(time.Hour+time.Minute), true, "streaming")
	p.SetPhase(PhaseReconnecting, errors.New("receive message: EOF").Error())
	check("reconnecting", time.Now().Add(12*time.Second), false, "replication connection lost 12s ago, reconnecting: receive message: EOF")
	p.SetPhase(PhaseStopping, "")
	check("stopping", time.Now(), false, "stopping")
}
