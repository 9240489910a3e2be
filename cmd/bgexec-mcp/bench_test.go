package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/stretchr/testify/require"
)

// BenchmarkEmptyPollResult measures what one empty poll of a session with
// a full output buffer costs to encode and send: the structured content
// this server sends (status fields) against the details the server sent
// before (baseline: the same poll, the whole retained output in
// details.aggregated). bytes/result is the structured content's size.
func BenchmarkEmptyPollResult(b *testing.B) {
	reg, err := bgexec.NewRegistry(bgexec.Config{})
	require.NoError(b, err)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(b, reg.Close(ctx))
	})
	sc := reg.Scope("bench")
	ctx := context.Background()
	res, err := sc.Exec(ctx, &bgexec.ExecRequest{Command: "seq 1 40000; echo done; exec sleep 300", Background: true})
	require.NoError(b, err)
	id := res.Details.SessionID
	pattern := "^done$"
	timeout := bgexec.Number(20000)
	_, err = sc.Process(ctx, &bgexec.ProcessRequest{Action: "wait", SessionID: id, Pattern: pattern, Timeout: &timeout})
	require.NoError(b, err)
	_, err = sc.Process(ctx, &bgexec.ProcessRequest{Action: "poll", SessionID: id})
	require.NoError(b, err)

	run := func(b *testing.B, encode func(*bgexec.Result) ([]byte, error)) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			res, err := sc.Process(ctx, &bgexec.ProcessRequest{Action: "poll", SessionID: id})
			if err != nil {
				b.Fatal(err)
			}
			out, err := encode(res)
			if err != nil {
				b.Fatal(err)
			}
			n = len(out)
		}
		b.ReportMetric(float64(n), "bytes/result")
	}
	b.Run("status-fields", func(b *testing.B) {
		run(b, func(r *bgexec.Result) ([]byte, error) { return json.Marshal(outputOf(r.Text(), &r.Details)) })
	})
	b.Run("baseline-details", func(b *testing.B) {
		run(b, func(r *bgexec.Result) ([]byte, error) { return json.Marshal(r.Details) })
	})
}
