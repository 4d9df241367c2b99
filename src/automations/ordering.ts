/**
 * Causal ordering of events for the triggers service (server.events.causal_ordering): an event that
 * `follows` another is held back until that one has been evaluated, then evaluated right after it.
 * A follower whose leader does not come within the lookback is evaluated anyway, in the order the
 * lost followers occurred. Each event is evaluated once.
 *
 * "memory" keeps what was seen and who waits in the process; "redis" keeps them in Redis (keys
 * under `<redis_stream>:ordering:`), so replicas sharing the redis broker order events together.
 */
import { Effect, Schema } from "effect"
import { redisConnection } from "../events/redis.ts"
import { ReceivedEvent } from "../events/schemas.ts"
import type { SettingsValue } from "../settings/settings.ts"

/** How long a follower waits for its leader, and how long an event is remembered as seen. */
export const PRECEDING_EVENT_LOOKBACK_MS = 15 * 60 * 1000

const MAX_SEEN = 100_000

export interface CausalOrdering {
  readonly hasBeenSeen: (id: string) => Effect.Effect<boolean>
  readonly markSeen: (id: string, at: number) => Effect.Effect<void>
  /** Whether the event must wait for its leader (it is then held); `leaderKnown` says the leader happened earlier elsewhere. */
  readonly holdBack: (event: ReceivedEvent, at: number, leaderKnown: boolean) => Effect.Effect<boolean>
  /** The events that were waiting for `leaderId`, in the order they occurred. */
  readonly releaseFollowers: (leaderId: string) => Effect.Effect<Array<ReceivedEvent>>
  /** Leaders that followers wait for, those waiting longest first, at most `limit`. */
  readonly waitedFor: (limit: number) => Effect.Effect<Array<string>>
  /** Followers that waited longer than the lookback, in the order they occurred. */
  readonly lostFollowers: (at: number) => Effect.Effect<Array<ReceivedEvent>>
}

const byOccurrence = (events: Array<ReceivedEvent>) => events.sort((a, b) => a.occurred.getTime() - b.occurred.getTime())

/** Whether `event` should wait: it follows an event not seen, and has not waited the whole lookback yet. */
const mustWait = (event: ReceivedEvent, at: number, leaderSeen: boolean, leaderKnown: boolean) =>
  event.follows !== null && !leaderSeen && !leaderKnown && at - event.received.getTime() < PRECEDING_EVENT_LOOKBACK_MS

export const memoryOrdering = (): CausalOrdering => {
  const seen = new Map<string, number>()
  const waiting = new Map<string, Array<ReceivedEvent>>()
  return {
    hasBeenSeen: (id) => Effect.sync(() => seen.has(id)),
    markSeen: (id, at) =>
      Effect.sync(() => {
        seen.set(id, at)
        if (seen.size <= MAX_SEEN) return
        // Oldest first: a Map keeps insertion order.
        for (const [key, seenAt] of seen) {
          if (seen.size <= MAX_SEEN && seenAt > at - PRECEDING_EVENT_LOOKBACK_MS) break
          seen.delete(key)
        }
      }),
    holdBack: (event, at, leaderKnown) =>
      Effect.sync(() => {
        if (!mustWait(event, at, event.follows !== null && seen.has(event.follows), leaderKnown)) return false
        const followers = waiting.get(event.follows!) ?? []
        if (!followers.some((f) => f.id === event.id)) followers.push(event)
        waiting.set(event.follows!, followers)
        return true
      }),
    releaseFollowers: (leaderId) =>
      Effect.sync(() => {
        const followers = waiting.get(leaderId) ?? []
        waiting.delete(leaderId)
        return byOccurrence(followers)
      }),
    waitedFor: (limit) => Effect.sync(() => [...waiting.keys()].slice(0, limit)),
    lostFollowers: (at) =>
      Effect.sync(() => {
        const lost: Array<ReceivedEvent> = []
        for (const [leader, followers] of waiting) {
          const stillWaiting = followers.filter((f) => at - f.received.getTime() < PRECEDING_EVENT_LOOKBACK_MS)
          lost.push(...followers.filter((f) => !stillWaiting.includes(f)))
          if (stillWaiting.length === 0) waiting.delete(leader)
          else waiting.set(leader, stillWaiting)
        }
        return byOccurrence(lost)
      })
  }
}

const decodeEvent = Schema.decodeUnknownSync(Schema.parseJson(ReceivedEvent))
const encodeEvent = Schema.encodeSync(Schema.parseJson(ReceivedEvent))

/** The ordering kept in Redis: seen ids as expiring keys, followers in a hash per leader, and when they arrived in a sorted set. */
export const redisOrdering = (url: string, prefix: string) =>
  Effect.map(redisConnection(url), (redis): CausalOrdering => {
    const seenKey = (id: string) => `${prefix}:seen:${id}`
    const followersKey = (leader: string) => `${prefix}:followers:${leader}`
    const waitingKey = `${prefix}:waiting`
    const take = async (leader: string, ids?: ReadonlyArray<string>) => {
      const entries: Array<[string, string | null]> = ids === undefined
        ? Object.entries(await redis.hgetall(followersKey(leader)))
        : await Promise.all(ids.map(async (id): Promise<[string, string | null]> => [id, await redis.hget(followersKey(leader), id)]))
      const events: Array<ReceivedEvent> = []
      const pipeline = redis.pipeline()
      for (const [id, json] of entries) {
        pipeline.hdel(followersKey(leader), id).zrem(waitingKey, `${leader}|${id}`)
        if (typeof json === "string") events.push(decodeEvent(json))
      }
      await pipeline.exec()
      return events
    }
    return {
      hasBeenSeen: (id) => Effect.promise(async () => (await redis.exists(seenKey(id))) === 1),
      markSeen: (id) => Effect.promise(() => redis.set(seenKey(id), "1", "PX", PRECEDING_EVENT_LOOKBACK_MS)).pipe(Effect.asVoid),
      holdBack: (event, at, leaderKnown) =>
        Effect.promise(async () => {
          const leaderSeen = event.follows !== null && (await redis.exists(seenKey(event.follows))) === 1
          if (!mustWait(event, at, leaderSeen, leaderKnown)) return false
          await redis
            .pipeline()
            .hset(followersKey(event.follows!), event.id, encodeEvent(event))
            .zadd(waitingKey, event.received.getTime(), `${event.follows}|${event.id}`)
            .exec()
          return true
        }),
      releaseFollowers: (leaderId) => Effect.promise(async () => byOccurrence(await take(leaderId))),
      waitedFor: (limit) =>
        Effect.promise(async () => {
          const members = await redis.zrange(waitingKey, 0, limit - 1)
          return [...new Set(members.map((member) => member.split("|")[0]!))]
        }),
      lostFollowers: (at) =>
        Effect.promise(async () => {
          const members = await redis.zrangebyscore(waitingKey, "-inf", `(${at - PRECEDING_EVENT_LOOKBACK_MS}`)
          const lost: Array<ReceivedEvent> = []
          for (const member of members) {
            const [leader, id] = member.split("|") as [string, string]
            lost.push(...(await take(leader, [id])))
          }
          return byOccurrence(lost)
        })
    }
  })

/** The ordering the settings choose. */
export const makeOrdering = (settings: SettingsValue) =>
  settings.server.events.causal_ordering === "redis"
    ? redisOrdering(settings.server.events.redis_url, `${settings.server.events.redis_stream}:ordering`)
    : Effect.sync(memoryOrdering)
