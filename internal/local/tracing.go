package local

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// tracerName is the instrumentation scope of Cairn's spans.
const tracerName = "github.com/cairnhq/cairn"

// Attribute keys from the OpenTelemetry semantic conventions for
// generative AI (gen_ai.*), plus Cairn's own (cairn.*).
const (
	attrOperation      = "gen_ai.operation.name"
	attrAgentName      = "gen_ai.agent.name"
	attrConversationID = "gen_ai.conversation.id"
	attrProvider       = "gen_ai.provider.name"
	attrRequestModel   = "gen_ai.request.model"
	attrInputTokens    = "gen_ai.usage.input_tokens"
	attrOutputTokens   = "gen_ai.usage.output_tokens"
	attrToolName       = "gen_ai.tool.name"
	attrToolCallID     = "gen_ai.tool.call.id"
	attrErrorType      = "error.type"
	attrSessionStatus  = "cairn.session.status"
	attrFrame          = "cairn.frame"
)

// newTracer returns nil without a provider: span helpers then cost nothing.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(tracerName)
}

// noSpan is the span of an untraced runner (a pointer, so it compares).
var noSpan trace.Span = &untraced{}

type untraced struct{ noop.Span }

// describer is implemented by models that can name their provider and model.
type describer interface {
	Describe() (provider, name string)
}

func (r *Runner) startTurnSpan(ctx context.Context, sessionID, agent string) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, noSpan
	}
	return r.tracer.Start(ctx, "invoke_agent "+agent, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String(attrOperation, "invoke_agent"),
		attribute.String(attrAgentName, agent),
		attribute.String(attrConversationID, sessionID),
	))
}

func endTurnSpan(span trace.Span, sess *session.Session, err error) {
	if span == noSpan {
		return
	}
	if sess != nil {
		span.SetAttributes(attribute.String(attrSessionStatus, string(sess.Status)))
	}
	endSpan(span, err)
}

func (r *Runner) startModelSpan(ctx context.Context, m model.Model, agent, frame string) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, noSpan
	}
	provider, name := "unknown", "unknown"
	if d, ok := m.(describer); ok {
		provider, name = d.Describe()
	}
	return r.tracer.Start(ctx, "chat "+name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String(attrOperation, "chat"),
		attribute.String(attrProvider, provider),
		attribute.String(attrRequestModel, name),
		attribute.String(attrAgentName, agent),
		attribute.String(attrFrame, frame),
	))
}

func (r *Runner) startToolSpan(ctx context.Context, tool, callID string) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, noSpan
	}
	return r.tracer.Start(ctx, "execute_tool "+tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String(attrOperation, "execute_tool"),
		attribute.String(attrToolName, tool),
		attribute.String(attrToolCallID, callID),
	))
}

func endSpan(span trace.Span, err error) {
	if span == noSpan {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attribute.String(attrErrorType, errorType(err)))
	}
	span.End()
}

func errorType(err error) string {
	if c := session.CodeOf(err); c != "" {
		return string(c)
	}
	return "error"
}
