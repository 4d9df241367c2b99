/**
 * Taking and giving back concurrency slots, the reference's way: all the named limits or none, with
 * a lease recording who holds what until when, and a Retry-After estimate for those turned away.
 */
import { SqlClient } from "@effect/sql"
import { Data, Effect, Option, Random } from "effect"
import { inTransaction } from "../database/errors.ts"
import { now } from "../domain/time.ts"
import { Settings } from "../settings/settings.ts"
import { type Lease, type LeaseHolder, LeaseStorage, LeaseStorageLive } from "./leases.ts"
import { ConcurrencyLimitsRepo, type GlobalConcurrencyLimitRow } from "./repo.ts"

/** A lease held "for good" (the v1 tag limits and task runs): about a hundred years. */
export const LONG_LEASE_SECONDS = 36_500 * 86_400

class NotAcquired extends Data.TaggedError("NotAcquired") {}

/**
 * A random wait with the given mean, kept within [0.75, 1.3] of it (the reference's clamped Poisson
 * interval), so clients turned away together do not all come back at once.
 */
export const clampedPoissonInterval = (average: number) =>
  Effect.map(Random.next, (u) => {
    if (average <= 0) return 0
    const cdf = (x: number) => 1 - Math.exp(-x / average)
    const lower = average * Math.log2(2 ** 1.3 / (2 ** 1.3 - 1))
    const upper = average * 1.3
    const draw = cdf(lower) + u * (cdf(upper) - cdf(lower))
    return -Math.log(Math.max(1 - draw, 1e-10)) * average
  })

export class ConcurrencySlots extends Effect.Service<ConcurrencySlots>()("baton/ConcurrencySlots", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* ConcurrencyLimitsRepo
    const leases = yield* LeaseStorage
    const settings = yield* Settings
    const tagWait = settings.server.tasks.tag_concurrency_slot_wait_seconds
    const maxWait = settings.server.concurrency.maximum_concurrency_slot_wait_seconds

    /** Takes `slots` on all the limits or on none (rolled back); true when taken. */
    const take = (ids: ReadonlyArray<string>, slots: number) =>
      ids.length === 0
        ? Effect.succeed(true)
        // Failing rolls back the increments of the limits that had room.
        : inTransaction(
          sql,
          Effect.flatMap(repo.increment(ids, slots), (ok) => (ok ? Effect.succeed(true) : Effect.fail(new NotAcquired())))
        ).pipe(Effect.catchTag("NotAcquired", () => Effect.succeed(false)))

    /**
     * Seconds a client turned away should wait: after the limit that blocks most (by denied slots,
     * relative to its size unless it decays), one average occupancy per slot ahead, capped; for a rate
     * limit, the time its decay takes. The denial is counted on every limit asked for.
     */
    const retryAfter = (limits: ReadonlyArray<GlobalConcurrencyLimitRow>, slots: number) =>
      Effect.gen(function* () {
        yield* repo.deny(limits.map((l) => l.id), slots)
        const blocking = (l: GlobalConcurrencyLimitRow) =>
          l.slot_decay_per_second > 0 ? slots + l.denied_slots : (slots + l.denied_slots) / l.limit
        const worst = limits.reduce((a, b) => (blocking(b) > blocking(a) ? b : a))
        const average = worst.slot_decay_per_second > 0
          ? (1 / worst.slot_decay_per_second) * blocking(worst)
          : (() => {
            const wait = worst.name.startsWith("tag:") ? tagWait : maxWait
            return Math.min(Math.min(worst.avg_slot_occupancy_seconds, wait) * blocking(worst), wait)
          })()
        return yield* clampedPoissonInterval(average)
      })

    const lease = (resourceIds: ReadonlyArray<string>, ttlSeconds: number, slots: number, holder: LeaseHolder | null) =>
      leases.create(resourceIds, ttlSeconds, { slots, holder })

    /** Gives back the slots of a lease just taken from the store. */
    const giveBack = (lease: Lease) =>
      Effect.flatMap(now, (at) =>
        repo.decrement(lease.resource_ids, lease.slots ?? 0, (at.getTime() - lease.created.getTime()) / 1000)
      )

    /**
     * Gives back what a lease holds and revokes it (nothing for a lease already gone). Taking the
     * lease and giving back its slots are one transaction, so a lease released on two replicas at
     * once (or by a client and the repossessor) frees its slots once.
     */
    const release = (leaseId: string) =>
      inTransaction(sql, Effect.flatMap(leases.take(leaseId), Option.match({ onNone: () => Effect.void, onSome: giveBack })))

    /** Revokes one expired lease and gives back its slots, in one transaction; false when none is left. */
    const repossessOne = inTransaction(
      sql,
      Effect.flatMap(leases.takeExpired, Option.match({ onNone: () => Effect.succeed(false), onSome: (lease) => Effect.as(giveBack(lease), true) }))
    )

    /** Every lease on the limit, revoked (nothing given back: the caller resets or deletes the limit). */
    const revokeAllOn = (limitId: string) =>
      Effect.gen(function* () {
        let offset = 0
        while (true) {
          const ids = yield* leases.activeIds({ limit: 100, offset })
          if (ids.length === 0) return
          let revoked = false
          for (const id of ids) {
            const found = yield* leases.find(id)
            if (Option.exists(found, (lease) => lease.resource_ids.includes(limitId))) {
              yield* leases.revoke(id)
              revoked = true
            }
          }
          offset = revoked ? 0 : offset + ids.length
        }
      })

    /** The leases a holder has on the limit. */
    const heldBy = (limitId: string, holderId: string) =>
      Effect.map(leases.holders(limitId), (holders) => holders.filter((h) => h.holder.id === holderId).map((h) => h.leaseId))

    return { take, retryAfter, lease, release, repossessOne, revokeAllOn, heldBy, leases } as const
  }),
  dependencies: [ConcurrencyLimitsRepo.Default, LeaseStorageLive]
}) {}
