/**
 * A Redis connection for the scope's life (the redis broker, cache and causal ordering share this).
 * ioredis is loaded on the first connection, so a server that does not use Redis never loads it.
 */
import { Effect } from "effect"
import type { Redis } from "ioredis"

export const redisConnection = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(() => import("ioredis")).pipe(
      Effect.map(({ Redis }): Redis => new Redis(url, { lazyConnect: false, maxRetriesPerRequest: null }))
    ),
    (client) => Effect.promise(() => client.quit().catch(() => undefined))
  )
