/**
 * Collection views, served from data Baton ships (it fetches nothing from the network): the worker
 * types and their default job templates, and the metadata of the system blocks.
 */
import { apiGroup } from "../http/group.ts"
import { Effect } from "effect"
import { SYSTEM_BLOCK_SCHEMA_VERSION } from "../blocks/registration.ts"
import { blockSchemaChecksum } from "../blocks/checksum.ts"
import { blockTypeOf, systemBlocks } from "../blocks/system-blocks.ts"
import { BatonApi } from "../api.ts"
import { NotFound } from "../domain/errors.ts"
import workerMetadata from "./views/aggregate-worker-metadata.json" with { type: "json" }

/** The system blocks as a collection lists its block types: by slug, each with its schema. */
const blockMetadata = {
  prefect: {
    block_types: Object.fromEntries(
      systemBlocks.map((block) => [
        block.slug,
        {
          ...blockTypeOf(block),
          block_schema: {
            checksum: blockSchemaChecksum(block.fields),
            fields: block.fields,
            capabilities: block.capabilities,
            version: SYSTEM_BLOCK_SCHEMA_VERSION
          }
        }
      ])
    )
  }
}

const views: Readonly<Record<string, Record<string, unknown> | undefined>> = {
  "aggregate-worker-metadata": workerMetadata,
  "aggregate-block-metadata": blockMetadata,
  // Known views Baton has no content for.
  "aggregate-flow-metadata": undefined,
  "demo-flows": undefined
}

export const CollectionsLive = apiGroup(BatonApi, "collections", (handlers) =>
  handlers.handle("readView", ({ path }) => {
    if (!(path.view in views)) return Effect.fail(new NotFound({ detail: `View ${path.view} not found in registry` }))
    const content = views[path.view]
    return content === undefined
      ? Effect.fail(new NotFound({ detail: `Requested content missing for view ${path.view}` }))
      : Effect.succeed(content)
  })
)
