package hosttest

import (
	"io"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestProcess(t *testing.T) {
	p, out := NewProcess()
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(out)
		done <- b
	}()
	_, err := p.Write([]byte("hi"))
	require.NoError(t, err)
	p.IgnoreTerm = true
	require.NoError(t, p.SignalGroup(syscall.SIGTERM))
	select {
	case <-p.exited:
		t.Fatal("SIGTERM ended a process that ignores it")
	default:
	}
	require.NoError(t, p.SignalGroup(syscall.SIGKILL))
	require.NoError(t, p.AwaitExit())
	assert.Equal(t, "hi", string(<-done), "the output ends at the exit")
	ws, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, syscall.SIGKILL, ws.Signal())
	assert.Equal(t, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, p.Signals())
	p.Exit(0)
	ws, _ = p.Reap()
	assert.True(t, ws.Signaled(), "only the first end counts")
}
