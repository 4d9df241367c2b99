/**
 * The docs page (Scalar's API reference with the Api's OpenAPI document inlined), loaded by
 * ./docs.ts on the first request for it.
 */
import type * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiScalar from "@effect/platform/HttpApiScalar"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import { Effect, Layer } from "effect"

/** An app answering every request with the docs page of `api`. */
export const docsPage = (api: HttpApi.HttpApi.Any) =>
  Effect.gen(function* () {
    const router = yield* HttpLayerRouter.make
    yield* Layer.build(HttpApiScalar.layerHttpLayerRouter({ api, path: "/*" })).pipe(
      Effect.provideService(HttpLayerRouter.HttpRouter, router),
      Effect.scoped
    )
    return router.asHttpEffect()
  })
