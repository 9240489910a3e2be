// Package otel turns a bgexec registry's events into OpenTelemetry spans
// and metrics. It is a module of its own, so the bgexec core takes no
// OpenTelemetry dependency.
//
// [NewObserver] returns a [bgexec.Observer] for Config.Observer. Each
// session becomes one span, named "execute_tool exec" with the GenAI
// semantic conventions' tool attributes (gen_ai.operation.name
// "execute_tool", gen_ai.tool.name "exec", gen_ai.tool.type "function",
// gen_ai.tool.call.id the exec call's id), and bgexec's own: bgexec.scope,
// bgexec.session.id, bgexec.host, bgexec.node, process.command_line,
// process.working_directory and, at the end, process.exit.code,
// bgexec.exit.signal, bgexec.exit.reason, bgexec.output.bytes and
// bgexec.output.truncated. A session that did not exit 0 has the status
// Error and an error.type attribute (its exit reason, or "exit_code").
// The span is a child of the span in the Exec call's context, starts when
// the command is spawned and ends when the session ends, however long
// after the call that is; the decision that let it run, the inputs and
// kill/remove/clear are span events on it.
//
// Metrics (instrument names and units):
//
//   - bgexec.sessions.running (UpDownCounter, {session}): sessions running;
//   - bgexec.session.duration (Histogram, s): from spawn to end, by
//     bgexec.exit.reason;
//   - bgexec.session.output (Counter, By): bytes the commands printed;
//   - bgexec.exec.refusals (Counter, {call}): calls the approval rules
//     denied, by bgexec.decided_by;
//   - bgexec.exec.duration (Histogram, s): how long each exec call took,
//     from its start to its return (a backgrounded command's call returns
//     at the yield window), by bgexec.status;
//   - bgexec.session.peak_memory (Histogram, By): each session's peak
//     memory, where its cgroup counts it (see bgexec.Event.PeakMemoryBytes).
//
// [WithTraceParent] passes the session span's trace context to the child
// as the TRACEPARENT (and TRACESTATE) environment variables, W3C trace
// context as the OpenTelemetry environment carrier names them, so a
// command that is itself instrumented continues the trace. It is opt-in,
// since it tells the child the trace ids.
package otel

import (
	"context"
	"sync"
	"time"

	"github.com/bgexec/bgexec"
	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/bgexec/bgexec/otel"

// Attribute keys of the spans and metrics.
const (
	AttrOperationName = attribute.Key("gen_ai.operation.name")
	AttrToolName      = attribute.Key("gen_ai.tool.name")
	AttrToolType      = attribute.Key("gen_ai.tool.type")
	AttrToolCallID    = attribute.Key("gen_ai.tool.call.id")
	AttrErrorType     = attribute.Key("error.type")
	AttrScope         = attribute.Key("bgexec.scope")
	AttrSessionID     = attribute.Key("bgexec.session.id")
	AttrHost          = attribute.Key("bgexec.host")
	AttrNode          = attribute.Key("bgexec.node")
	AttrCommandLine   = attribute.Key("process.command_line")
	AttrWorkdir       = attribute.Key("process.working_directory")
	AttrExitCode      = attribute.Key("process.exit.code")
	AttrExitSignal    = attribute.Key("bgexec.exit.signal")
	AttrExitReason    = attribute.Key("bgexec.exit.reason")
	AttrOutputBytes   = attribute.Key("bgexec.output.bytes")
	AttrTruncated     = attribute.Key("bgexec.output.truncated")
	AttrDecision      = attribute.Key("bgexec.decision")
	AttrDecidedBy     = attribute.Key("bgexec.decided_by")
	AttrReason        = attribute.Key("bgexec.reason")
	AttrAction        = attribute.Key("bgexec.action")
	AttrBytes         = attribute.Key("bgexec.bytes")
	AttrStatus        = attribute.Key("bgexec.status")
	AttrPeakMemory    = attribute.Key("bgexec.memory.peak")
)

// SpanName is the name of every session span: the GenAI conventions'
// "execute_tool {gen_ai.tool.name}".
const SpanName = "execute_tool exec"

// Option configures [NewObserver].
type Option func(*config)

type config struct {
	tp          trace.TracerProvider
	mp          metric.MeterProvider
	traceParent bool
}

// WithTracerProvider sets the tracer provider. The default is the global
// one (otel.GetTracerProvider()).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets the meter provider. The default is the global one
// (otel.GetMeterProvider()).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTraceParent passes each session span's context to its command as
// TRACEPARENT (and TRACESTATE when there is one). Off by default.
func WithTraceParent() Option { return func(c *config) { c.traceParent = true } }

// maxPendingDecisions bounds the decisions kept until their spawn event
// arrives (a call may be refused after its decision, by a quota, and
// never spawn).
const maxPendingDecisions = 1024

// Observer is the [bgexec.Observer] NewObserver returns. It is safe for
// concurrent use and may serve several registries.
type Observer struct {
	tracer      trace.Tracer
	traceParent bool
	running     metric.Int64UpDownCounter
	duration    metric.Float64Histogram
	output      metric.Int64Counter
	refusals    metric.Int64Counter
	calls       metric.Float64Histogram
	peak        metric.Int64Histogram

	mu        sync.Mutex              // guards the maps
	spans     map[string]trace.Span   // by session id, until the end
	counted   map[string]struct{}     // sessions bgexec.sessions.running counts
	decisions map[string]bgexec.Event // by call id, until the spawn
	order     []string                // call ids in decisions, oldest first
}

// NewObserver returns an observer that records spans and metrics through
// the given (or the global) providers. Instrument creation errors are
// handed to the global OpenTelemetry error handler, and such an instrument
// records nothing.
func NewObserver(opts ...Option) bgexec.Observer {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otelapi.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otelapi.GetMeterProvider()
	}
	m := c.mp.Meter(ScopeName)
	o := &Observer{
		tracer: c.tp.Tracer(ScopeName), traceParent: c.traceParent,
		spans: make(map[string]trace.Span), decisions: make(map[string]bgexec.Event), counted: make(map[string]struct{}),
	}
	var err error
	if o.running, err = m.Int64UpDownCounter("bgexec.sessions.running", metric.WithUnit("{session}"), metric.WithDescription("Sessions running")); err != nil {
		otelapi.Handle(err)
	}
	if o.duration, err = m.Float64Histogram("bgexec.session.duration", metric.WithUnit("s"), metric.WithDescription("Time from a session's spawn to its end")); err != nil {
		otelapi.Handle(err)
	}
	if o.output, err = m.Int64Counter("bgexec.session.output", metric.WithUnit("By"), metric.WithDescription("Bytes the sessions' commands printed")); err != nil {
		otelapi.Handle(err)
	}
	if o.refusals, err = m.Int64Counter("bgexec.exec.refusals", metric.WithUnit("{call}"), metric.WithDescription("Exec calls the approval rules denied")); err != nil {
		otelapi.Handle(err)
	}
	if o.calls, err = m.Float64Histogram("bgexec.exec.duration", metric.WithUnit("s"), metric.WithDescription("Time from an exec call's start to its return")); err != nil {
		otelapi.Handle(err)
	}
	if o.peak, err = m.Int64Histogram("bgexec.session.peak_memory", metric.WithUnit("By"), metric.WithDescription("The most memory each session was charged")); err != nil {
		otelapi.Handle(err)
	}
	return o
}

// SpawnEnv starts the session's span as a child of the exec call's
// context and, with WithTraceParent, returns its trace context as
// TRACEPARENT and TRACESTATE.
func (o *Observer) SpawnEnv(ctx context.Context, ev *bgexec.Event) []string {
	span := o.startSpan(ctx, *ev)
	if !o.traceParent || !span.SpanContext().IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(ctx, span), carrier)
	var env []string
	if v := carrier.Get("traceparent"); v != "" {
		env = append(env, "TRACEPARENT="+v)
	}
	if v := carrier.Get("tracestate"); v != "" {
		env = append(env, "TRACESTATE="+v)
	}
	return env
}

// startSpan starts (once) the span of the session ev spawns.
func (o *Observer) startSpan(ctx context.Context, ev bgexec.Event) trace.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.spans[ev.SessionID]; ok {
		return s
	}
	at := ev.Time
	if at.IsZero() {
		at = time.Now()
	}
	_, span := o.tracer.Start(ctx, SpanName, trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			AttrOperationName.String("execute_tool"), AttrToolName.String("exec"), AttrToolType.String("function"),
			AttrToolCallID.String(ev.CallID), AttrScope.String(ev.Scope), AttrSessionID.String(ev.SessionID),
			AttrHost.String(ev.Host), AttrCommandLine.String(ev.Command), AttrWorkdir.String(ev.Workdir),
		))
	if ev.Node != "" {
		span.SetAttributes(AttrNode.String(ev.Node))
	}
	o.spans[ev.SessionID] = span
	return span
}

// Observe records one event.
func (o *Observer) Observe(ev bgexec.Event) {
	switch ev.Kind {
	case bgexec.EventDecision:
		o.decision(ev)
	case bgexec.EventSpawn:
		span := o.startSpan(context.Background(), ev)
		if d, ok := o.takeDecision(ev.CallID); ok {
			span.AddEvent("bgexec.decision", trace.WithTimestamp(d.Time), trace.WithAttributes(
				AttrDecision.String(d.Decision), AttrDecidedBy.String(d.DecidedBy), AttrReason.String(d.Reason)))
		}
		o.mu.Lock()
		o.counted[ev.SessionID] = struct{}{}
		o.mu.Unlock()
		o.running.Add(context.Background(), 1)
	case bgexec.EventInput, bgexec.EventControl:
		if span := o.span(ev.SessionID, false); span != nil {
			attrs := []attribute.KeyValue{AttrAction.String(ev.Action)}
			if ev.Kind == bgexec.EventInput {
				attrs = append(attrs, AttrBytes.Int(ev.Bytes))
			}
			span.AddEvent("bgexec."+string(ev.Kind), trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
		}
	case bgexec.EventEnd:
		o.end(ev)
	case bgexec.EventResult:
		o.calls.Record(context.Background(), ev.Duration.Seconds(), metric.WithAttributes(AttrStatus.String(ev.Status)))
	}
}

// decision counts a refusal, or keeps an allowed call's decision for its
// span.
func (o *Observer) decision(ev bgexec.Event) {
	switch ev.Decision {
	case bgexec.DecisionDenied:
		o.refusals.Add(context.Background(), 1, metric.WithAttributes(AttrDecidedBy.String(ev.DecidedBy)))
		return
	case bgexec.DecisionPending:
		return
	}
	if ev.CallID == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.order) >= maxPendingDecisions {
		delete(o.decisions, o.order[0])
		o.order = o.order[1:]
	}
	o.decisions[ev.CallID] = ev
	o.order = append(o.order, ev.CallID)
}

func (o *Observer) takeDecision(call string) (bgexec.Event, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.decisions[call]
	if ok {
		delete(o.decisions, call)
		for i, c := range o.order {
			if c == call {
				o.order = append(o.order[:i], o.order[i+1:]...)
				break
			}
		}
	}
	return d, ok
}

// span returns the session's span; with take, it forgets it.
func (o *Observer) span(id string, take bool) trace.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.spans[id]
	if take {
		delete(o.spans, id)
	}
	return s
}

// end ends the session's span and records its metrics. A spawn that
// failed ends its span too.
func (o *Observer) end(ev bgexec.Event) {
	ctx := context.Background()
	reason := attribute.String(string(AttrExitReason), ev.ExitReason)
	o.mu.Lock()
	_, counted := o.counted[ev.SessionID]
	delete(o.counted, ev.SessionID)
	o.mu.Unlock()
	if counted {
		o.running.Add(ctx, -1)
	}
	o.duration.Record(ctx, ev.Duration.Seconds(), metric.WithAttributes(reason))
	o.output.Add(ctx, ev.OutputBytes)
	if ev.PeakMemoryBytes >= 0 {
		o.peak.Record(ctx, ev.PeakMemoryBytes)
	}
	span := o.span(ev.SessionID, true)
	if span == nil {
		return
	}
	span.SetAttributes(reason, AttrOutputBytes.Int64(ev.OutputBytes), AttrTruncated.Bool(ev.Truncated))
	if ev.PeakMemoryBytes >= 0 {
		span.SetAttributes(AttrPeakMemory.Int64(ev.PeakMemoryBytes))
	}
	if ev.ExitCode != nil {
		span.SetAttributes(AttrExitCode.Int(*ev.ExitCode))
	}
	if ev.Signal != "" {
		span.SetAttributes(AttrExitSignal.String(ev.Signal))
	}
	switch {
	case ev.ExitReason != "exit":
		span.SetAttributes(AttrErrorType.String(ev.ExitReason))
		span.SetStatus(codes.Error, "session ended: "+ev.ExitReason)
	case ev.ExitCode != nil && *ev.ExitCode != 0:
		span.SetAttributes(AttrErrorType.String("exit_code"))
		span.SetStatus(codes.Error, "non-zero exit code")
	}
	at := ev.Time
	if at.IsZero() {
		at = time.Now()
	}
	span.End(trace.WithTimestamp(at))
}
