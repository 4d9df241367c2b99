/**
 * Tracing: a server started with OTEL_EXPORTER_OTLP_ENDPOINT exports the spans of its requests, SQL
 * statements and service ticks to that collector over OTLP/HTTP; unset, it traces nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { loadSettings, Settings } from "../../src/settings/settings.ts"
import { parseHeaders, TracingLive, tracesUrl } from "../../src/telemetry/tracing.ts"
import { onServer } from "../support/database.ts"
import { receiver } from "../support/receiver.ts"
import { ensureBundle, ok, scopedEmptyHome, scopedServerProcess } from "../support/server-process.ts"

interface ExportedSpan {
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

/** The spans and resource attributes of OTLP/HTTP JSON export bodies. */
const exported = (bodies: ReadonlyArray<string>) => {
  const spans: Array<ExportedSpan> = []
  const resources: Array<Record<string, unknown>> = []
  for (const body of bodies) {
    for (const resourceSpans of JSON.parse(body).resourceSpans) {
      resources.push(Object.fromEntries(resourceSpans.resource.attributes.map((a: ExportedSpan["attributes"][number]) => [a.key, Object.values(a.value)[0]])))
      for (const scope of resourceSpans.scopeSpans) spans.push(...scope.spans)
    }
  }
  return { spans, resources }
}

const attribute = (span: ExportedSpan, key: string) => {
  const found = span.attributes.find((a) => a.key === key)
  return found === undefined ? undefined : Object.values(found.value)[0]
}

describe("tracing", () => {
  it("derives the traces URL and reads the headers as the OpenTelemetry exporters do", () => {
    expect(tracesUrl("http://collector:4318")).toBe("http://collector:4318/v1/traces")
    expect(tracesUrl("http://collector:4318/")).toBe("http://collector:4318/v1/traces")
    expect(tracesUrl("https://otlp.example.com/v1/traces")).toBe("https://otlp.example.com/v1/traces")
    expect(parseHeaders("api-key=abc%20def, x-team = data ,broken,=nokey")).toEqual({ "api-key": "abc def", "x-team": "data" })
  })

  it.effect("reads the standard OTEL_* variables when Baton's own are unset; Baton's win", () =>
    Effect.gen(function* () {
      const standard = ConfigProvider.fromMap(new Map([["OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4318"], ["OTEL_SERVICE_NAME", "orchestrator"]]))
      const fromStandard = yield* Effect.withConfigProvider(loadSettings(), standard)
      expect(fromStandard.server.tracing.otlp_endpoint).toBe("http://otel:4318")
      expect(fromStandard.server.tracing.service_name).toBe("orchestrator")
      const both = ConfigProvider.fromMap(new Map([["OTEL_SERVICE_NAME", "orchestrator"], ["BATON_SERVER_TRACING_SERVICE_NAME", "baton-eu"]]))
      const fromBoth = yield* Effect.withConfigProvider(loadSettings(), both)
      expect(fromBoth.server.tracing.service_name).toBe("baton-eu")
      expect(fromBoth.server.tracing.otlp_endpoint).toBeNull()
    }))

  it.effect("with no endpoint, no span is recorded", () =>
    Effect.gen(function* () {
      const settings = yield* loadSettings().pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
      const span = yield* Effect.withSpan(Effect.currentSpan, "probe").pipe(
        Effect.provide(TracingLive.pipe(Layer.provide(Layer.succeed(Settings, settings))))
      )
      // A disabled tracer hands out spans that are never sampled, so never exported.
      expect(span.sampled).toBe(false)
    }))

  it.live.skipIf(onServer())("a server exports its requests, SQL statements and service ticks, with the headers set, under its service name", () =>
    Effect.scoped(
      Effect.gen(function* () {
        yield* Effect.promise(ensureBundle)
        const collector = yield* receiver()
        const home = yield* scopedEmptyHome
        const server = yield* scopedServerProcess({
          home,
          env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_HEADERS: "x-collector-token=t0k3n", OTEL_SERVICE_NAME: "baton-under-test" }
        })
        yield* Effect.promise(() => ok(server, "POST", "/flows/", { name: "traced" }, 201))
        yield* Effect.promise(() => ok(server, "POST", "/flows/filter", {}))
        // A graceful stop exports what is left.
        yield* Effect.promise(() => server.kill("SIGTERM"))
        const exports = collector.requests.filter((r) => r.url === "/v1/traces")
        expect(exports.length).toBeGreaterThan(0)
        expect(exports.every((r) => r.method === "POST" && r.headers["x-collector-token"] === "t0k3n")).toBe(true)
        const { spans, resources } = exported(exports.map((r) => r.body))
        expect(resources.every((r) => r["service.name"] === "baton-under-test")).toBe(true)
        const requests = spans.filter((s) => s.name.startsWith("http.server"))
        expect(requests.some((s) => attribute(s, "http.request.method") === "POST" && String(attribute(s, "url.path")).endsWith("/flows/"))).toBe(true)
        expect(requests.some((s) => String(attribute(s, "url.path")).endsWith("/flows/filter"))).toBe(true)
        expect(spans.some((s) => s.name === "sql.execute" && String(attribute(s, "db.query.text") ?? "").includes("INSERT INTO flow"))).toBe(true)
        expect(spans.some((s) => s.name.startsWith("service."))).toBe(true)
      })
    ), 120_000)
})
