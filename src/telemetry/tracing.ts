/**
 * Tracing: with OTEL_EXPORTER_OTLP_ENDPOINT set (settings/tracing.ts), the spans of
 * requests, SQL statements, Effect.fn calls and background service ticks are exported over
 * OTLP/HTTP (JSON) to that collector, in batches every few seconds and at shutdown. Unset, the
 * tracer is off: no span is made, timed or kept.
 */
import { FetchHttpClient } from "@effect/platform"
import { OtlpSerialization, OtlpTracer } from "@effect/opentelemetry"
import { Effect, Layer, Redacted } from "effect"
import { loadTracingSettings, type TracingSettings } from "../settings/tracing.ts"
import { BATON_VERSION } from "../version.ts"

/** Whether spans are exported: what the request tracer and the span layer follow. */
export const tracingEnabled: Effect.Effect<boolean> = Effect.map(loadTracingSettings, (tracing) => tracing.endpoint !== null)

/**
 * The traces URL of an OTLP/HTTP endpoint, as the OpenTelemetry exporters derive it: the base
 * endpoint plus `v1/traces`, unless it names that path already.
 */
export const tracesUrl = (endpoint: string): string => {
  const trimmed = endpoint.trim().replace(/\/+$/, "")
  return trimmed.endsWith("/v1/traces") ? trimmed : `${trimmed}/v1/traces`
}

/** OTEL_EXPORTER_OTLP_HEADERS' form, `key=value,key2=value2` (values URL-encoded), as a record. */
export const parseHeaders = (raw: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of raw.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    const key = pair.slice(0, at).trim()
    const value = pair.slice(at + 1).trim()
    if (key === "") continue
    try {
      headers[key] = decodeURIComponent(value)
    } catch {
      headers[key] = value
    }
  }
  return headers
}

/** The tracer `tracing` asks for: the OTLP exporter, or none at all. */
export const tracingLayer = (tracing: TracingSettings) =>
  tracing.endpoint === null
    ? Layer.setTracerEnabled(false)
    : OtlpTracer.layer({
      url: tracesUrl(tracing.endpoint),
      resource: { serviceName: tracing.serviceName, serviceVersion: BATON_VERSION },
      headers: tracing.headers === null ? {} : parseHeaders(Redacted.value(tracing.headers)),
      shutdownTimeout: "3 seconds"
    }).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))

/** The tracer the environment asks for. */
export const TracingLive = Layer.unwrapEffect(Effect.map(loadTracingSettings, tracingLayer))
