/**
 * Tracing: a server started with OTEL_EXPORTER_OTLP_ENDPOINT exports the spans of its requests, SQL
 * statements and service ticks to that collector over OTLP/HTTP; unset, it traces nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { loadTracingSettings } from "../../src/settings/tracing.ts"
import { parseHeaders, tracesUrl, tracingLayer } from "../../src/telemetry/tracing.ts"
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

  it.effect("reads the standard OpenTelemetry variables; a blank one is unset", () =>
    Effect.gen(function* () {
      const from = (entries: ReadonlyArray<readonly [string, string]>) =>
        Effect.withConfigProvider(loadTracingSettings, ConfigProvider.fromMap(new Map(entries)))
      const set = yield* from([["OTEL_EXPORTER_OTLP_ENDPOINT", " http://otel:4318 "], ["OTEL_EXPORTER_OTLP_HEADERS", "k=v"], ["OTEL_SERVICE_NAME", "orchestrator"]])
      expect(set.endpoint).toBe("http://otel:4318")
      expect(set.headers === null ? null : Redacted.value(set.headers)).toBe("k=v")
      expect(set.serviceName).toBe("orchestrator")
      expect(yield* from([["OTEL_EXPORTER_OTLP_ENDPOINT", ""]])).toEqual({ endpoint: null, headers: null, serviceName: "baton" })
    }))

  it.live("with no endpoint, no span is recorded; with one, spans are", () =>
    Effect.gen(function* () {
      const probe = Effect.withSpan(Effect.currentSpan, "probe")
      // A disabled tracer hands out spans that are never sampled, so never exported.
      const off = yield* Effect.provide(probe, tracingLayer({ endpoint: null, headers: null, serviceName: "baton" }))
      expect(off.sampled).toBe(false)
      const on = yield* Effect.scoped(
        Effect.flatMap(receiver(), (collector) =>
          Effect.provide(probe, tracingLayer({ endpoint: collector.url, headers: null, serviceName: "baton" })))
      )
      expect(on.sampled).toBe(true)
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
