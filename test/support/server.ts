/**
 * An in-process Baton server for tests: a real HTTP server on an ephemeral port, on the test file's
 * own database, without background services (a test forks those itself), plus a raw client that
 * shows status, headers and body exactly as a user's client sees them.
 */
import { FetchHttpClient, type HttpApi, HttpApiClient, type HttpApiGroup, HttpClient, HttpServer } from "@effect/platform"
import type { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { BatonApi } from "../../src/api.ts"
import { ApiLive, AreasLive, HttpServerLive, serveApi } from "../../src/server.ts"
import { TracingLive } from "../../src/telemetry/tracing.ts"
import { layer as settingsLayer, Settings, type SettingsOverrides } from "../../src/settings/settings.ts"
import { Transitions } from "../../src/orchestration/transitions.ts"
import { Leadership } from "../../src/database/leadership.ts"
import { UiStatic } from "../../src/ui/bundle.ts"
import { TestDatabase } from "./database.ts"
import { DecodeFastPathLive } from "../../src/domain/decode-fast-path.ts"

export interface TestServerOptions {
  readonly overrides?: SettingsOverrides
  /** Serve another Api (e.g. BatonApi plus a probe group) with these handlers. */
  readonly api?: {
    readonly api: HttpApi.HttpApi.Any
    readonly handlers: Layer.Layer<HttpApi.Api, unknown, SqlClient.SqlClient | Settings | Leadership>
  }
}

/** The memo map the test server was built with: what a test builds with it shares the server's instances. */
export class ServerMemoMap extends Context.Tag("test/ServerMemoMap")<ServerMemoMap, Layer.MemoMap>() {}

/**
 * Builds `layer` into the test's scope as part of the test server's build: a service the server
 * holds (the EventBus, the TriggersEngine, FlowRunsRepo …) is that instance, not a second one. For
 * background services, whose registrations provide the services they use:
 * `yield* buildInServer(runBackgroundServices((s) => s.name === "triggers"))`.
 */
export const buildInServer = <ROut, E, RIn>(layer: Layer.Layer<ROut, E, RIn>) =>
  Effect.flatMap(Effect.all([ServerMemoMap, Effect.scope]), ([memoMap, scope]) => Layer.buildWithMemoMap(layer, memoMap, scope))

/**
 * The server Layer for a test file: `it.layer(testServer(…))((it) => …)`. For a second server in the
 * same file, use `layer(testServer(…))` (the standalone export of @effect/vitest): after its first
 * use, @effect/vitest replaces `it.layer` with its nested form, which builds inside the first Layer
 * and shares its memo map, so a second `it.layer` would be served by the first server.
 */
export const testServer = (options: TestServerOptions = {}) =>
  (options.api ? serveApi(options.api.api, options.api.handlers) : ApiLive).pipe(
    Layer.provideMerge(HttpServerLive),
    // The UI bundle the server serves (the same instance), copied before the port opens.
    Layer.provideMerge(UiStatic.Default),
    // The area services the handlers use (the same instances), for tests that call them directly.
    Layer.provideMerge(AreasLive),
    // The test server leads, as a full server does (on PostgreSQL once it holds the lock).
    Layer.provideMerge(Leadership.Default),
    // The same instance the handlers publish to (Layers are memoised within one build).
    Layer.provideMerge(Transitions.Default),
    Layer.provideMerge(Layer.effect(ServerMemoMap, Layer.CurrentMemoMap)),
    Layer.provideMerge(TestDatabase),
    Layer.provideMerge(
      // No test server looks for an installed prefect package unless it asks (test/ui/prefect-package*.test.ts):
      // what the machine has installed must not change what the tests see.
      settingsLayer({
        "server.api.host": "127.0.0.1",
        "server.api.port": 0,
        "server.ui.discover_prefect_package": false,
        ...options.overrides
      })
    )
  ).pipe(
    // The tracer as the server runs it: off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
    Layer.provide(TracingLive),
    // Decodes as the server makes them (src/domain/decode-fast-path.ts), installed before anything is built.
    Layer.provide(DecodeFastPathLive)
  )

/** The server's root URL (without the base path). */
export const serverUrl = Effect.map(HttpServer.HttpServer, (server) => {
  const address = server.address
  if (address._tag !== "TcpAddress") throw new Error("test server must listen on TCP")
  return `http://127.0.0.1:${address.port}`
})

/** The API's URL: root plus base path. */
export const apiUrl = Effect.zipWith(serverUrl, Settings, (root, settings) => root + settings.server.api.base_path)

/**
 * A JSON value as a test reads it from a response: at any path (`body.detail[0].loc`), through the
 * array methods (`body.map((run) => run.name)`), compared with any scalar (`run.id === id`).
 *
 * Why not `unknown` with narrowing, or a Schema to decode every body with: wire tests read a few
 * fields of hundreds of bodies, and the assertion on each field is the narrowing; a decode would
 * also strip the fields the schema does not name, the very ones a wire test looks for. Why not
 * `any`: a Json does not pass for a string, a number or a typed value (a parameter, arithmetic, a
 * method of string) without an explicit `as`, and not at all for an object type, so the places
 * where a test trusts the wire show. It is a fiction at the type level (every value reads as an
 * array, an object and a scalar at once); a value read at a path that is not there is undefined at
 * run time, as with `any`.
 *
 * Where a test goes on to use what it read: `idOf(body)` checks an id is a string, `okAs(Schema,
 * res)` (support/api.ts) checks a body against a wire schema and types it as the wire has it, and
 * tests about behaviour rather than the wire call `clientOf(group)`, whose results are decoded.
 */
export type Json = JsonList & JsonFields & (string | number | boolean)
interface JsonList extends ReadonlyArray<Json> {}
interface JsonFields {
  readonly [key: string]: Json
}

export interface RawResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly body: Json
}

export interface RequestOptions {
  /** A value to send as JSON, or a string sent as it is. */
  readonly body?: unknown
  readonly headers?: Record<string, string>
  /** Path relative to the server root instead of the API base. */
  readonly fromRoot?: boolean
}

/** One HTTP request to the test server, answered as the raw response. */
export const request = (method: string, path: string, options: RequestOptions = {}) =>
  Effect.gen(function* () {
    const base = options.fromRoot ? yield* serverUrl : yield* apiUrl
    const body =
      options.body === undefined ? undefined : typeof options.body === "string" ? options.body : JSON.stringify(options.body)
    const headers = {
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...options.headers
    }
    return yield* Effect.promise(async (): Promise<RawResponse> => {
      const response = await fetch(base + path, { method, headers, ...(body !== undefined ? { body } : {}) })
      const text = await response.text()
      let parsed: Json
      try {
        parsed = JSON.parse(text)
      } catch {
        // Not JSON: the test reads `text`; `body` reads as undefined, as `RawResponse` says.
        parsed = undefined as unknown as Json
      }
      return { status: response.status, headers: response.headers, text, body: parsed }
    })
  })

/**
 * A typed client of the Baton Api, derived from the same Api the server serves. It builds a client
 * for every group (about half a second): a test that calls one group uses `clientOf`.
 */
export const client = Effect.flatMap(apiUrl, (baseUrl) => HttpApiClient.make(BatonApi, { baseUrl })).pipe(
  Effect.provide(FetchHttpClient.layer)
)

type GroupName = typeof BatonApi extends HttpApi.HttpApi<infer _Id, infer Groups, infer _Error, infer _R>
  ? HttpApiGroup.HttpApiGroup.Name<Groups>
  : never

/**
 * A typed client of one group of the Api (`clientOf("flows")`), built in a few milliseconds:
 * payloads are the decoded side of the endpoint's schema (defaults included), results are decoded.
 * For tests about behaviour; tests of the wire (statuses, error bodies, headers) use `request`.
 */
export const clientOf = <const G extends GroupName>(group: G) =>
  Effect.gen(function* () {
    const baseUrl = yield* apiUrl
    const httpClient = yield* HttpClient.HttpClient
    return yield* HttpApiClient.group(BatonApi, { group, baseUrl, httpClient })
  }).pipe(Effect.provide(FetchHttpClient.layer))
