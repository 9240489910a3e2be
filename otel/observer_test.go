package otel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	bgotel "github.com/bgexec/bgexec/otel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// setup is a registry whose observer records into an in-memory span
// exporter and a manual metric reader.
type setup struct {
	reg    *bgexec.Registry
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	// spawned receives a value each time a spawn event was recorded.
	spawned chan struct{}
}

// signalling forwards to the OpenTelemetry observer and reports each
// delivered spawn event.
type signalling struct {
	obs     *bgotel.Observer
	spawned chan struct{}
}

func (w signalling) Observe(ev bgexec.Event) {
	w.obs.Observe(ev)
	if ev.Kind == bgexec.EventSpawn {
		select {
		case w.spawned <- struct{}{}:
		default:
		}
	}
}

func (w signalling) SpawnEnv(ctx context.Context, ev *bgexec.Event) []string {
	return w.obs.SpawnEnv(ctx, ev)
}

func newSetup(t *testing.T, cfg bgexec.Config, opts ...bgotel.Option) *setup {
	t.Helper()
	s := &setup{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader(), spawned: make(chan struct{}, 16)}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(s.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	obs := bgotel.NewObserver(append([]bgotel.Option{bgotel.WithTracerProvider(s.tp), bgotel.WithMeterProvider(mp)}, opts...)...)
	cfg.Observer = signalling{obs.(*bgotel.Observer), s.spawned}
	cfg.YieldMs = bgexec.MaxYieldMs
	reg, err := bgexec.NewRegistry(cfg)
	require.NoError(t, err)
	s.reg = reg
	t.Cleanup(func() {
		s.close(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, mp.Shutdown(ctx))
		require.NoError(t, s.tp.Shutdown(ctx))
	})
	return s
}

// close closes the registry, which delivers every queued event.
func (s *setup) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.reg.Close(ctx))
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// metrics collects the reader's metrics by name.
func (s *setup) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func sumOf(t *testing.T, m metricdata.Metrics) int64 {
	t.Helper()
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum: %T", m.Name, m.Data)
	var n int64
	for _, dp := range sum.DataPoints {
		n += dp.Value
	}
	return n
}

func TestSessionSpanIsChildOfTheCall(t *testing.T) {
	s := newSetup(t, bgexec.Config{})
	ctx, parent := s.tp.Tracer("agent").Start(testCtx(t), "agent turn")
	res, err := s.reg.Scope("agent:a").Exec(ctx, &bgexec.ExecRequest{Command: "echo traced", Env: map[string]string{"K": "v"}})
	require.NoError(t, err)
	require.Equal(t, bgexec.StatusCompleted, res.Details.Status, res.Text())
	parent.End()
	s.close(t)

	var session []tracetest.SpanStub
	for _, sp := range s.spans.GetSpans() {
		if sp.Name == bgotel.SpanName {
			session = append(session, sp)
		}
	}
	require.Len(t, session, 1)
	sp := session[0]
	assert.Equal(t, parent.SpanContext().SpanID(), sp.Parent.SpanID(), "a child of the exec call's span")
	assert.Equal(t, parent.SpanContext().TraceID(), sp.SpanContext.TraceID())
	a := attrs(sp.Attributes)
	assert.Equal(t, "execute_tool", a[bgotel.AttrOperationName].AsString())
	assert.Equal(t, "exec", a[bgotel.AttrToolName].AsString())
	assert.NotEmpty(t, a[bgotel.AttrToolCallID].AsString())
	assert.Equal(t, "agent:a", a[bgotel.AttrScope].AsString())
	assert.NotEmpty(t, a[bgotel.AttrSessionID].AsString())
	assert.Equal(t, "echo traced", a[bgotel.AttrCommandLine].AsString())
	assert.Equal(t, int64(0), a[bgotel.AttrExitCode].AsInt64())
	assert.Equal(t, "exit", a[bgotel.AttrExitReason].AsString())
	assert.Equal(t, int64(len("traced\n")), a[bgotel.AttrOutputBytes].AsInt64())
	assert.Equal(t, codes.Unset, sp.Status.Code)
	require.NotEmpty(t, sp.Events)
	assert.Equal(t, "bgexec.decision", sp.Events[0].Name)
	assert.Equal(t, "allowed", attrs(sp.Events[0].Attributes)[bgotel.AttrDecision].AsString())
	assert.False(t, sp.EndTime.Before(sp.StartTime))

	m := s.metrics(t)
	assert.Equal(t, int64(0), sumOf(t, m["bgexec.sessions.running"]))
	assert.Equal(t, int64(len("traced\n")), sumOf(t, m["bgexec.session.output"]))
	h, ok := m["bgexec.session.duration"].Data.(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, h.DataPoints, 1)
	assert.Equal(t, uint64(1), h.DataPoints[0].Count)
	assert.Equal(t, map[string]uint64{"completed": 1}, callsByStatus(t, m))
}

func TestKilledSessionAndRefusals(t *testing.T) {
	s := newSetup(t, bgexec.Config{})
	sc := s.reg.Scope("agent:k")
	res, err := sc.Exec(testCtx(t), &bgexec.ExecRequest{Command: "echo ready; exec sleep 60", Background: true})
	require.NoError(t, err)
	id := res.Details.SessionID
	wait := bgexec.Number(20000)
	res, err = sc.Process(testCtx(t), &bgexec.ProcessRequest{Action: "wait", SessionID: id, Pattern: "ready", Timeout: &wait})
	require.NoError(t, err)
	require.Equal(t, "pattern", res.Details.Condition, res.Text())

	// Events are delivered asynchronously: the wrapper says when the
	// spawn event has been recorded.
	select {
	case <-s.spawned:
	case <-testCtx(t).Done():
		t.Fatal("the spawn event was not delivered")
	}
	assert.Equal(t, int64(1), sumOf(t, s.metrics(t)["bgexec.sessions.running"]), "the running session is counted")
	res, err = sc.Process(testCtx(t), &bgexec.ProcessRequest{Action: "kill", SessionID: id})
	require.NoError(t, err)
	require.Contains(t, res.Text(), "Killed session")
	res, err = sc.Exec(testCtx(t), &bgexec.ExecRequest{Command: "echo no", Security: "deny"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	s.close(t)

	spans := s.spans.GetSpans()
	require.Len(t, spans, 1, "one span: the refused call spawned nothing")
	sp := spans[0]
	a := attrs(sp.Attributes)
	assert.Equal(t, codes.Error, sp.Status.Code)
	assert.Equal(t, "killed", a[bgotel.AttrErrorType].AsString())
	assert.Equal(t, "SIGTERM", a[bgotel.AttrExitSignal].AsString())
	var names []string
	for _, e := range sp.Events {
		names = append(names, e.Name)
	}
	assert.Contains(t, names, "bgexec.control")

	m := s.metrics(t)
	assert.Equal(t, int64(0), sumOf(t, m["bgexec.sessions.running"]))
	assert.Equal(t, int64(1), sumOf(t, m["bgexec.exec.refusals"]))
	sum := m["bgexec.exec.refusals"].Data.(metricdata.Sum[int64])
	by, _ := sum.DataPoints[0].Attributes.Value(bgotel.AttrDecidedBy)
	assert.Equal(t, "policy", by.AsString())
	assert.Equal(t, map[string]uint64{"running": 1, "failed": 1}, callsByStatus(t, m), "one exec call returned running, one was refused")
}

// callsByStatus counts the exec calls bgexec.exec.duration recorded, by
// bgexec.status.
func callsByStatus(t *testing.T, m map[string]metricdata.Metrics) map[string]uint64 {
	t.Helper()
	h, ok := m["bgexec.exec.duration"].Data.(metricdata.Histogram[float64])
	require.True(t, ok, "bgexec.exec.duration is a float64 histogram")
	out := map[string]uint64{}
	for _, dp := range h.DataPoints {
		st, _ := dp.Attributes.Value(bgotel.AttrStatus)
		out[st.AsString()] += dp.Count
		assert.Greater(t, dp.Sum, 0.0, "calls take time")
	}
	return out
}

func TestTraceParentIsOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := "without WithTraceParent the child sees no TRACEPARENT"
		var opts []bgotel.Option
		if on {
			name = "WithTraceParent gives the child the session span's context"
			opts = append(opts, bgotel.WithTraceParent())
		}
		t.Run(name, func(t *testing.T) {
			s := newSetup(t, bgexec.Config{}, opts...)
			res, err := s.reg.Scope("agent:tp").Exec(testCtx(t), &bgexec.ExecRequest{Command: `printf '[%s]' "$TRACEPARENT"`})
			require.NoError(t, err)
			require.Equal(t, bgexec.StatusCompleted, res.Details.Status, res.Text())
			s.close(t)
			spans := s.spans.GetSpans()
			require.Len(t, spans, 1)
			if !on {
				assert.Equal(t, "[]", res.Text())
				return
			}
			sc := spans[0].SpanContext
			want := "[00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01]"
			assert.Equal(t, want, strings.TrimSpace(res.Text()))
		})
	}
}
