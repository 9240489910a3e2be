package bgexec

import (
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"strconv"
)

// Word lists for readable session ids. Fixed data, never mutated.
var (
	slugAdjectives = [...]string{
		"amber", "brave", "brisk", "calm", "clever", "cosmic", "crisp", "dapper",
		"eager", "fancy", "fleet", "gentle", "glad", "golden", "grand", "happy",
		"hazy", "humble", "jolly", "keen", "kind", "lively", "lucky", "mellow",
		"merry", "misty", "nimble", "noble", "plucky", "polite", "proud", "quick",
		"quiet", "rapid", "rosy", "rustic", "shiny", "silent", "silver", "sleek",
		"smooth", "snappy", "solid", "spry", "steady", "sunny", "swift", "tidy",
		"tranquil", "vivid", "warm", "witty", "zesty", "bold", "bright", "cheery",
		"daring", "fresh", "frosty", "lucid", "placid", "sturdy", "velvet", "wise",
	}
	slugNouns = [...]string{
		"otter", "falcon", "harbor", "meadow", "comet", "canyon", "maple", "river",
		"badger", "lantern", "willow", "summit", "pebble", "breeze", "cedar", "dune",
		"ember", "fjord", "glacier", "heron", "island", "juniper", "kestrel", "lagoon",
		"marsh", "nebula", "orchid", "prairie", "quartz", "raven", "sparrow", "thicket",
		"tundra", "valley", "walrus", "yarrow", "zephyr", "acorn", "beacon", "coral",
		"delta", "ferret", "grove", "hollow", "iris", "jasper", "koala", "lynx",
		"mesa", "nutmeg", "oasis", "panda", "quill", "reef", "shore", "tiger",
		"umbra", "vista", "wren", "bison", "cobalt", "dingo", "finch", "gecko",
	}
)

func randIndex(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		// crypto/rand.Reader does not fail on supported platforms.
		panic("bgexec: crypto/rand: " + err.Error())
	}
	return int(v.Int64())
}

func randomWords(n int) string {
	s := slugAdjectives[randIndex(len(slugAdjectives))]
	for i := 1; i < n; i++ {
		if i == n-1 {
			s += "-" + slugNouns[randIndex(len(slugNouns))]
		} else {
			s += "-" + slugAdjectives[randIndex(len(slugAdjectives))]
		}
	}
	return s
}

// newSlug returns an id not accepted by taken: <adjective>-<noun>, then
// <base>-2 … <base>-12, then three words, then a random hex suffix.
func newSlug(taken func(string) bool) string {
	base := randomWords(2)
	if !taken(base) {
		return base
	}
	for i := 2; i <= 12; i++ {
		if id := base + "-" + strconv.Itoa(i); !taken(id) {
			return id
		}
	}
	for range 8 {
		if id := randomWords(3); !taken(id) {
			return id
		}
	}
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		if id := base + "-" + hex.EncodeToString(b[:]); !taken(id) {
			return id
		}
	}
}
