package contain

import (
	"encoding/binary"
	"encoding/hex"
	"net"
	"strconv"
	"strings"

	"github.com/bgexec/bgexec/internal/host"
)

// UserHZ is the unit of the CPU times in /proc/<pid>/stat: clock ticks,
// 100 a second on every Linux architecture (USER_HZ).
const UserHZ = 100

// ParseListeners adds the LISTEN sockets of a /proc/net/tcp{,6} table to
// t, by inode. A line is "sl local rem st tx:rx tr:when retrnsmt uid
// timeout inode …", local being the address in hex (32-bit words in host
// order) and the port in hex.
func ParseListeners(table string, t map[uint64]host.Listener) {
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" { // TCP_LISTEN
			continue
		}
		addr, port, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		p, err1 := strconv.ParseUint(port, 16, 16)
		ino, err2 := strconv.ParseUint(f[9], 10, 64)
		ip, err3 := hex.DecodeString(addr)
		if err1 != nil || err2 != nil || err3 != nil || (len(ip) != 4 && len(ip) != 16) {
			continue
		}
		for i := 0; i < len(ip); i += 4 {
			binary.BigEndian.PutUint32(ip[i:], binary.NativeEndian.Uint32(ip[i:]))
		}
		t[ino] = host.Listener{Port: int(p), Address: net.IP(ip).String()}
	}
}
