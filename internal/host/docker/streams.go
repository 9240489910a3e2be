package dockerhost

import (
	"bufio"
	"net"
	"time"
)

// ttyOutput is a terminal exec's output: the attach stream, read by the
// session's reader, which notes the end of the stream on its process.
type ttyOutput struct {
	r *bufio.Reader
	p *process
}

func (o *ttyOutput) Read(b []byte) (int, error) {
	n, err := o.r.Read(b)
	if err != nil {
		o.p.streamEnded()
	}
	return n, err
}

// Close ends the stream (the session drains it no longer).
func (o *ttyOutput) Close() error {
	o.p.streamEnded()
	return o.p.conn.Close()
}

// stdin is an exec's input: the write side of its attach stream. Close
// half-closes the stream, so the command reads end of file while its
// output keeps coming.
type stdin struct {
	conn net.Conn
	pty  bool
}

func (s *stdin) Write(b []byte) (int, error) { return s.conn.Write(b) }

// SetWriteDeadline bounds a write to a command that does not read.
func (s *stdin) SetWriteDeadline(t time.Time) error { return s.conn.SetWriteDeadline(t) }

// Close sends end of file (pipes only: a terminal's end of input is EOT,
// and its stream is closed with its output).
func (s *stdin) Close() error {
	if s.pty {
		return nil
	}
	if cw, ok := s.conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
