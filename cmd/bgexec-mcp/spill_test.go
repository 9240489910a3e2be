package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpillDirConfig(t *testing.T) {
	t.Run("spilling is off by default", func(t *testing.T) {
		st, err := parseConfig(nil, io.Discard, noEnv)
		require.NoError(t, err)
		assert.Empty(t, st.opts.cfg.SpillDir)
	})
	t.Run("the key sets it and the flag overrides the key", func(t *testing.T) {
		fromFile, fromFlag := t.TempDir(), t.TempDir()
		file := writeConfig(t, `{"spillDir": "`+fromFile+`"}`)
		st, err := parseConfig([]string{"-config", file}, io.Discard, noEnv)
		require.NoError(t, err)
		assert.Equal(t, fromFile, st.opts.cfg.SpillDir)
		st, err = parseConfig([]string{"-config", file, "-spill-dir", fromFlag}, io.Discard, noEnv)
		require.NoError(t, err)
		assert.Equal(t, fromFlag, st.opts.cfg.SpillDir)
	})
	t.Run("a directory that does not exist stops the server", func(t *testing.T) {
		_, err := parseConfig([]string{"-spill-dir", filepath.Join(t.TempDir(), "nope")}, io.Discard, noEnv)
		require.ErrorContains(t, err, "Config.SpillDir")
		require.ErrorContains(t, err, "is not an existing directory")
	})
}
