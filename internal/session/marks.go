package session

import (
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// Styled runs in Screen.Marked sit between markers in brackets U+27E6
// and U+27E7, which terminal programs hardly ever draw, so a marker is not
// mistaken for screen text: ⟦r⟧…⟦/r⟧ reverse video, ⟦b⟧…⟦/b⟧ bold,
// ⟦u⟧…⟦/u⟧ underline.

// styleBits are the marked attributes of a cell.
type styleBits uint8

const (
	bitBold styleBits = 1 << iota
	bitUnderline
	bitReverse
)

var markNames = [...]struct {
	bit         styleBits
	open, close string
}{
	{bitBold, "⟦b⟧", "⟦/b⟧"},
	{bitUnderline, "⟦u⟧", "⟦/u⟧"},
	{bitReverse, "⟦r⟧", "⟦/r⟧"},
}

func bitsOf(c *uv.Cell) styleBits {
	if c == nil {
		return 0
	}
	var b styleBits
	if c.Style.Attrs&uv.AttrBold != 0 {
		b |= bitBold
	}
	if c.Style.Underline != ansi.UnderlineNone {
		b |= bitUnderline
	}
	if c.Style.Attrs&uv.AttrReverse != 0 {
		b |= bitReverse
	}
	return b
}

// markedLocked renders the screen like screenLocked, with bold, underlined
// and reverse-video runs between markers. Markers nest: where the style
// changes, the open markers close (innermost first) and the new ones open
// in the order bold, underline, reverse. Trailing blanks are dropped,
// styled or not; a run ends at the row's end.
func (t *terminal) markedLocked() string {
	cols, rows := t.emu.Width(), t.emu.Height()
	var b []byte
	keep := 0
	for y := range rows {
		if y > 0 {
			b = append(b, '\n')
		}
		// The row's last non-blank cell.
		last := -1
		for x := range cols {
			if c := t.emu.CellAt(x, y); c != nil && c.Content != "" && c.Content != " " {
				last = x
			}
		}
		var open styleBits
		for x := 0; x <= last; x++ {
			c := t.emu.CellAt(x, y)
			if c != nil && c.Content == "" && c.Width == 0 {
				continue // the second half of a wide character
			}
			if bits := bitsOf(c); bits != open {
				b = closeMarks(b, open)
				b = openMarks(b, bits)
				open = bits
			}
			if c == nil || c.Content == "" {
				b = append(b, ' ')
			} else {
				b = append(b, c.Content...)
			}
		}
		b = closeMarks(b, open)
		if last >= 0 {
			keep = len(b)
		}
	}
	return string(b[:keep])
}

func openMarks(b []byte, bits styleBits) []byte {
	for _, m := range markNames {
		if bits&m.bit != 0 {
			b = append(b, m.open...)
		}
	}
	return b
}

func closeMarks(b []byte, bits styleBits) []byte {
	for i := len(markNames) - 1; i >= 0; i-- {
		if bits&markNames[i].bit != 0 {
			b = append(b, markNames[i].close...)
		}
	}
	return b
}
