/**
 * The OpenAPI document and the docs page, each made on its first request and kept. The docs page
 * inlines the Scalar API reference (megabytes of JavaScript), so its module (./docs-page.ts) is
 * only loaded when somebody asks for the page; a server nobody browses never holds it.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import { Effect } from "effect"

export interface DocsOptions {
  /** Path of the OpenAPI document, below the base path. */
  readonly openApiPath: `/${string}`
  /** Path of the docs page, below the base path. */
  readonly docsPath: `/${string}`
}

/** Serves the Api's OpenAPI document and its docs page (the same ones HttpApiBuilder and HttpApiScalar make). */
export const layer = (options: DocsOptions) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.gen(function* () {
      const { api } = yield* HttpApi.Api
      const openApi = yield* Effect.cached(
        Effect.suspend(() => HttpServerResponse.json(OpenApi.fromApi(api))).pipe(Effect.orDie)
      )
      yield* router.get(options.openApiPath, openApi)
      const docsPage = yield* Effect.cached(
        Effect.promise(() => import("./docs-page.ts")).pipe(Effect.flatMap((page) => page.docsPage(api)))
      )
      yield* router.get(options.docsPath, Effect.flatMap(docsPage, (serve) => Effect.scoped(serve)))
    })
  )
