package contain

import (
	"testing"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/stretchr/testify/assert"
)

func TestParseListeners(t *testing.T) {
	t.Parallel()
	table := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 100 0 0 10 0
   2: 0100007F:0050 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:0051 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0000000000000000 100 0 0 10 0
   4: garbage
`
	got := map[uint64]host.Listener{}
	ParseListeners(table, got)
	assert.Equal(t, map[uint64]host.Listener{
		111: {Port: 3000, Address: "::"},
		222: {Port: 8080, Address: "::1"},
		444: {Port: 81, Address: "127.0.0.1"},
	}, got, "established sockets and garbage are skipped")
}
