import { apiGroup } from "../http/group.ts"
import { HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { ConcurrencyLeaseGone, ConcurrencyLimitNotFound, TagConcurrencyLimitNotFound } from "./errors.ts"
import { Settings } from "../settings/settings.ts"
import { ConcurrencyLimitsRepo, type GlobalConcurrencyLimitRow } from "./repo.ts"
import { ConcurrencyLimit, ConcurrencyLimitV2 } from "./schemas.ts"
import { ConcurrencySlots, LONG_LEASE_SECONDS } from "./slots.ts"
import { createdOrFound } from "../http/responses.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i


/** 423 Locked, with when to try again (a header the declared errors cannot carry). */
const locked = (detail: string, retryAfter?: number) =>
  HttpServerResponse.unsafeJson(
    { detail },
    { status: 423, headers: retryAfter === undefined ? {} : { "retry-after": String(retryAfter) } }
  )

const minimal = (row: GlobalConcurrencyLimitRow, name = row.name) => ({ id: row.id, name, limit: row.limit })

const asGlobal = (row: GlobalConcurrencyLimitRow) => ({
  id: row.id,
  created: row.created,
  updated: row.updated,
  active: row.active,
  name: row.name,
  limit: row.limit,
  active_slots: row.decayed_active_slots,
  slot_decay_per_second: row.slot_decay_per_second
})


export const ConcurrencyLimitsV2Live = apiGroup(BatonApi, "concurrencyLimitsV2", (handlers) =>
  Effect.gen(function* () {
    const repo = yield* ConcurrencyLimitsRepo
    const slots = yield* ConcurrencySlots

    const find = (idOrName: string) =>
      (UUID.test(idOrName) ? repo.find(idOrName) : repo.findByName(idOrName)).pipe(orFail(() => new ConcurrencyLimitNotFound()))

    /**
     * Takes `count` slots on the active limits named (all or none). Answers the limits found (inactive
     * ones too), or a 423 response when one is full.
     */
    const acquire = (names: ReadonlyArray<string>, count: number, mode: "concurrency" | "rate_limit") =>
      Effect.gen(function* () {
        const limits = yield* repo.readByNames(names)
        const active = limits.filter((l) => l.active)
        if (active.some((l) => l.limit < count)) {
          return yield* new ValidationError({ detail: "Slots requested is greater than the limit" })
        }
        const undecayed = active.filter((l) => l.slot_decay_per_second === 0)
        if (mode === "rate_limit" && undecayed.length > 0) {
          return yield* new ValidationError({
            detail: `Only concurrency limits with slot decay can be used for rate limiting. The following limits do not have a decay configured: '${undecayed.map((l) => l.name).join(",")}'`
          })
        }
        if (yield* slots.take(active.map((l) => l.id), count)) return { limits, refused: undefined }
        return { limits, refused: locked("Locked", yield* slots.retryAfter(active, count)) }
      })

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const id = yield* repo.create(payload)
          return yield* createdOrFound(ConcurrencyLimitV2, Option.getOrThrow(yield* repo.find(id)), true)
        })
      )
      .handle("read", ({ path }) => Effect.map(find(path.id_or_name), asGlobal))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          Effect.map(repo.list({ offset: payload.offset, limit }), (rows) => rows.map(asGlobal))
        )
      )
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(find(path.id_or_name), (row) => Effect.asVoid(repo.update(row.id, payload)))
      )
      .handle("delete", ({ path }) => Effect.flatMap(find(path.id_or_name), (row) => Effect.asVoid(repo.remove(row.id))))
      .handle("increment", ({ payload }) =>
        Effect.map(acquire(payload.names, payload.slots, payload.mode), ({ limits, refused }) =>
          refused ?? limits.map((l) => minimal(l))
        )
      )
      .handle("incrementWithLease", ({ payload }) =>
        Effect.gen(function* () {
          const { limits, refused } = yield* acquire(payload.names, payload.slots, payload.mode)
          if (refused !== undefined) return refused
          const lease = yield* slots.lease(limits.map((l) => l.id), payload.lease_duration, payload.slots, payload.holder ?? null)
          return { lease_id: lease.id, limits: limits.map((l) => minimal(l)) }
        })
      )
      .handle("decrement", ({ payload }) =>
        Effect.gen(function* () {
          const limits = yield* repo.readByNames(payload.names)
          const active = limits.filter((l) => l.active).map((l) => l.id)
          if (active.length > 0) yield* repo.decrement(active, payload.slots, payload.occupancy_seconds)
          return limits.map((l) => minimal(l))
        })
      )
      .handle("decrementWithLease", ({ payload }) => Effect.asVoid(slots.release(payload.lease_id)))
      .handle("renewLease", ({ path, payload }) =>
        Effect.flatMap(slots.leases.renew(path.lease_id, payload.lease_duration), (renewed) =>
          renewed ? Effect.void : Effect.fail(new ConcurrencyLeaseGone())
        )
      )
  })
).pipe(Layer.provide([ConcurrencyLimitsRepo.Default, ConcurrencySlots.Default]))

const TAG = "tag:"

export const ConcurrencyLimitsLive = apiGroup(BatonApi, "concurrencyLimits", (handlers) =>
  Effect.gen(function* () {
    const repo = yield* ConcurrencyLimitsRepo
    const slots = yield* ConcurrencySlots
    const tagWait = (yield* Settings).server.tasks.tag_concurrency_slot_wait_seconds

    /** The tag limit as v1 answers it: the task runs holding its slots listed. */
    const shape = (row: GlobalConcurrencyLimitRow) =>
      Effect.map(slots.leases.holders(row.id), (holders) => ({
        id: row.id,
        created: row.created,
        updated: row.updated,
        tag: row.name.slice(TAG.length),
        concurrency_limit: row.limit,
        active_slots: holders.filter((h) => h.holder.type === "task_run").map((h) => h.holder.id)
      }))

    const byTag = (tag: string) => repo.findByName(TAG + tag).pipe(orFail(() => new TagConcurrencyLimitNotFound()))

    /** The tag limit with this id: a global limit that is not a tag's is not one. */
    const byId = (id: string) =>
      repo.find(id).pipe(
        Effect.map(Option.filter((row) => row.name.startsWith(TAG))),
        orFail(() => new TagConcurrencyLimitNotFound())
      )

    const remove = (row: GlobalConcurrencyLimitRow) =>
      Effect.gen(function* () {
        yield* slots.revokeAllOn(row.id)
        yield* repo.remove(row.id)
        return null
      })

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const existing = Option.getOrUndefined(yield* repo.findByName(TAG + payload.tag))
          const id = existing === undefined
            ? yield* repo.create({ name: TAG + payload.tag, limit: payload.concurrency_limit })
            : existing.id
          if (existing !== undefined) yield* repo.setLimit(existing.id, payload.concurrency_limit)
          const body = yield* shape(Option.getOrThrow(yield* repo.find(id)))
          return yield* createdOrFound(ConcurrencyLimit, body, existing === undefined)
        })
      )
      .handle("read", ({ path }) =>
        Effect.flatMap(byId(path.id), shape)
      )
      .handle("readByTag", ({ path }) => Effect.flatMap(byTag(path.tag), shape))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          Effect.flatMap(repo.list({ offset: payload.offset, limit, prefix: TAG }), (rows) => Effect.forEach(rows, shape))
        )
      )
      .handle("reset", ({ path, payload }) =>
        Effect.gen(function* () {
          const row = yield* byTag(path.tag)
          yield* slots.revokeAllOn(row.id)
          // The slots are exactly those given now.
          const holders = payload.slot_override ?? []
          yield* repo.update(row.id, { active_slots: holders.length })
          for (const id of holders) yield* slots.lease([row.id], LONG_LEASE_SECONDS, 1, { type: "task_run", id })
          return null
        })
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(repo.find(path.id).pipe(orFail(() => new TagConcurrencyLimitNotFound())), remove)
      )
      .handle("deleteByTag", ({ path }) => Effect.flatMap(byTag(path.tag), remove))
      .handle("increment", ({ payload }) =>
        Effect.gen(function* () {
          const rows = yield* repo.readByNames(payload.names.map((t) => TAG + t))
          const byName = new Map(rows.map((r) => [r.name, r]))
          const ordered = payload.names.flatMap((t) => (byName.has(TAG + t) ? [byName.get(TAG + t)!] : []))
          const zero = ordered.find((r) => r.limit === 0)
          if (zero !== undefined) {
            const tag = zero.name.slice(TAG.length)
            return locked(`The concurrency limit on tag "${tag}" is 0 and will deadlock if the task tries to run again.`)
          }
          const active = ordered.filter((r) => r.active)
          if (active.length === 0) return []
          if (!(yield* slots.take(active.map((r) => r.id), 1))) {
            return locked(`Concurrency limit for the ${active[0]!.name.slice(TAG.length)} tag has been reached`, tagWait)
          }
          yield* slots.lease(active.map((r) => r.id), LONG_LEASE_SECONDS, 1, { type: "task_run", id: payload.task_run_id })
          return active.map((r) => minimal(r, r.name.slice(TAG.length)))
        })
      )
      .handle("decrement", ({ payload }) =>
        Effect.gen(function* () {
          const rows = yield* repo.readByNames(payload.names.map((t) => TAG + t))
          for (const row of rows) {
            for (const leaseId of yield* slots.heldBy(row.id, payload.task_run_id)) yield* slots.release(leaseId)
          }
          return rows.map((r) => minimal(r))
        })
      )
  })
).pipe(Layer.provide([ConcurrencyLimitsRepo.Default, ConcurrencySlots.Default]))
