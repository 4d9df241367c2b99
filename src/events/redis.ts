/** A Redis connection for the scope's life (the redis broker, cache and causal ordering share this). */
import { Effect } from "effect"
import { Redis } from "ioredis"

export const redisConnection = (url: string) =>
  Effect.acquireRelease(
    Effect.sync(() => new Redis(url, { lazyConnect: false, maxRetriesPerRequest: null })),
    (client) => Effect.promise(() => client.quit().catch(() => undefined))
  )
