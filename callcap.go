package bgexec

import (
	"fmt"
	"strconv"
	"time"
)

// capWait applies Config.MaxCallWaitMs to a wait a call asked for. It
// returns the wait to use and whether the cap shortened it. Every action
// that blocks for a caller-chosen time goes through it, so that no call
// outlives a host's request timeout.
func (st *settings) capWait(d time.Duration) (time.Duration, bool) {
	if st.maxCallWait <= 0 || d <= st.maxCallWait {
		return d, false
	}
	return st.maxCallWait, true
}

// cappedNote is the sentence a call adds when it stopped at the call cap:
// what was asked (param, in ms), the cap, and what to do next.
func (st *settings) cappedNote(param string, asked time.Duration, next string) string {
	return fmt.Sprintf("This call returned at the server's limit of %s ms per call (%s asked for %s ms); %s",
		msText(st.maxCallWait), param, msText(asked), next)
}

func msText(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
}
