package otel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bgexec/bgexec"
	bgotel "github.com/bgexec/bgexec/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Each session becomes an "execute_tool exec" span under the agent's
// span, and the child gets TRACEPARENT. A real program passes its own
// providers (with OTLP exporters), or none for the global ones.
func ExampleNewObserver() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider()
	defer tp.Shutdown(ctx)
	defer mp.Shutdown(ctx)

	reg, err := bgexec.NewRegistry(bgexec.Config{Observer: bgotel.NewObserver(
		bgotel.WithTracerProvider(tp), bgotel.WithMeterProvider(mp), bgotel.WithTraceParent())})
	if err != nil {
		log.Fatal(err)
	}
	turn, span := tp.Tracer("agent").Start(ctx, "agent turn")
	res, err := reg.Scope("agent:main:main").Exec(turn, &bgexec.ExecRequest{Command: `test -n "$TRACEPARENT" && echo traced`})
	if err != nil {
		log.Fatal(err)
	}
	span.End()
	_ = reg.Close(ctx) // delivers the session's end: its span ends
	fmt.Println(res.Text())
	for _, s := range spans.GetSpans() {
		if s.Name == bgotel.SpanName {
			fmt.Println(s.Name, "under the agent turn:", s.Parent.SpanID() == span.SpanContext().SpanID())
		}
	}
	// Output:
	// traced
	// execute_tool exec under the agent turn: true
}
