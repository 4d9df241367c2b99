/**
 * Where traces go: the standard OpenTelemetry environment variables, read here (the settings module
 * is the one reader of the environment) and kept out of the settings tree and its report, whose
 * keys are the specification's.
 */
import { Config, Effect, Option, Redacted } from "effect"

export interface TracingSettings {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's OTLP/HTTP endpoint; none, no tracing. */
  readonly endpoint: string | null
  /** OTEL_EXPORTER_OTLP_HEADERS, `key=value,key2=value2`: sent with every export (may hold a key). */
  readonly headers: Redacted.Redacted<string> | null
  /** OTEL_SERVICE_NAME, "baton" by default. */
  readonly serviceName: string
}

const optional = (name: string) =>
  Effect.map(
    Config.option(Config.string(name)).pipe(Effect.orElseSucceed(() => Option.none<string>())),
    (value) => Option.getOrNull(Option.filter(value, (v) => v.trim() !== ""))
  )

/** The tracing settings of the environment (through the current ConfigProvider). */
export const loadTracingSettings: Effect.Effect<TracingSettings> = Effect.gen(function* () {
  const endpoint = yield* optional("OTEL_EXPORTER_OTLP_ENDPOINT")
  const headers = yield* optional("OTEL_EXPORTER_OTLP_HEADERS")
  const serviceName = yield* optional("OTEL_SERVICE_NAME")
  return {
    endpoint: endpoint?.trim() ?? null,
    headers: headers === null ? null : Redacted.make(headers),
    serviceName: serviceName?.trim() ?? "baton"
  }
})
