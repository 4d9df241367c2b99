/**
 * Concurrency leases: who holds slots of which limits, until when. One interface, two stores chosen
 * by `server.concurrency.lease_storage`: "memory" (one process, gone on restart; the default on the
 * embedded database) and "database" (a table, so leases survive restarts and replicas share them,
 * and a lease taken inside a transaction is rolled back with it; the default on PostgreSQL).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { sqlErrorAsDefect, sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, IdRow, findRowBy } from "../database/rows.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Settings } from "../settings/settings.ts"

export interface LeaseHolder {
  readonly type: "flow_run" | "task_run" | "deployment"
  readonly id: string
}

export interface Lease {
  readonly id: string
  readonly resource_ids: ReadonlyArray<string>
  readonly expiration: Date
  readonly created: Date
  /** Slots it holds on each of its limits; null for a lease without metadata. */
  readonly slots: number | null
  readonly holder: LeaseHolder | null
}

export interface LeaseStore {
  readonly create: (
    resourceIds: ReadonlyArray<string>,
    ttlSeconds: number,
    metadata: { readonly slots: number; readonly holder: LeaseHolder | null } | null
  ) => Effect.Effect<Lease>
  /** Expired but not yet revoked leases are still found. */
  readonly find: (id: string) => Effect.Effect<Option.Option<Lease>>
  /** False when there is no such lease. */
  readonly renew: (id: string, ttlSeconds: number) => Effect.Effect<boolean>
  readonly revoke: (id: string) => Effect.Effect<void>
  /**
   * Removes the lease and returns it, at most once however many processes ask together: who takes it
   * gives its slots back. Inside a transaction the database store gives it back on rollback.
   */
  readonly take: (id: string) => Effect.Effect<Option.Option<Lease>>
  /** Takes one expired lease that has metadata (one no other transaction is taking), if any. */
  readonly takeExpired: Effect.Effect<Option.Option<Lease>>
  readonly activeIds: (options: { readonly limit: number; readonly offset: number }) => Effect.Effect<ReadonlyArray<string>>
  readonly expiredIds: (limit: number) => Effect.Effect<ReadonlyArray<string>>
  /** Active leases on the limit that name a holder. */
  readonly holders: (limitId: string) => Effect.Effect<ReadonlyArray<{ readonly leaseId: string; readonly holder: LeaseHolder }>>
}

export class LeaseStorage extends Context.Tag("baton/LeaseStorage")<LeaseStorage, LeaseStore>() {}

const later = (at: Date, seconds: number) => new Date(at.getTime() + seconds * 1000)

/** Leases in the server process, as the reference keeps them by default. */
export const memoryStore = Effect.sync((): LeaseStore => {
  const leases = new Map<string, Lease>()
  return {
    create: (resourceIds, ttlSeconds, metadata) =>
      Effect.gen(function* () {
        const at = yield* now
        const lease: Lease = {
          id: yield* newId,
          resource_ids: [...resourceIds],
          expiration: later(at, ttlSeconds),
          created: at,
          slots: metadata?.slots ?? null,
          holder: metadata?.holder ?? null
        }
        leases.set(lease.id, lease)
        return lease
      }),
    find: (id) => Effect.sync(() => Option.fromNullable(leases.get(id))),
    renew: (id, ttlSeconds) =>
      Effect.map(now, (at) => {
        const lease = leases.get(id)
        if (lease === undefined) return false
        leases.set(id, { ...lease, expiration: later(at, ttlSeconds) })
        return true
      }),
    revoke: (id) => Effect.sync(() => void leases.delete(id)),
    take: (id) =>
      Effect.sync(() => {
        const lease = leases.get(id)
        leases.delete(id)
        return Option.fromNullable(lease)
      }),
    takeExpired: Effect.map(now, (at) => {
      for (const lease of leases.values()) {
        if (lease.expiration < at && lease.slots !== null) {
          leases.delete(lease.id)
          return Option.some(lease)
        }
      }
      return Option.none()
    }),
    activeIds: ({ limit, offset }) =>
      Effect.map(now, (at) => [...leases.values()].filter((l) => l.expiration > at).slice(offset, offset + limit).map((l) => l.id)),
    expiredIds: (limit) =>
      Effect.map(now, (at) => [...leases.values()].filter((l) => l.expiration < at).slice(0, limit).map((l) => l.id)),
    holders: (limitId) =>
      Effect.map(now, (at) =>
        [...leases.values()]
          .flatMap((l) => (l.expiration > at && l.holder !== null && l.resource_ids.includes(limitId) ? [{ leaseId: l.id, holder: l.holder }] : []))
      )
  }
})

/** A row of `concurrency_lease` (its uuid[] comes as an array of strings). */
const LeaseRow = Schema.Struct({
  id: Schema.String,
  created: Schema.DateFromSelf,
  expiration: Schema.DateFromSelf,
  resource_ids: Schema.Array(Schema.String),
  slots: Schema.NullOr(Schema.Number),
  holder_type: Schema.NullOr(Schema.Literal("flow_run", "task_run", "deployment")),
  holder_id: Schema.NullOr(Schema.String)
})
type LeaseRow = typeof LeaseRow.Type

const toLease = (row: LeaseRow): Lease => ({
  id: row.id,
  created: row.created,
  expiration: row.expiration,
  resource_ids: row.resource_ids,
  slots: row.slots,
  holder: row.holder_type === null || row.holder_id === null ? null : { type: row.holder_type, id: row.holder_id }
})

/** Leases in the `concurrency_lease` table; a failed statement is a defect. */
export const databaseStore = Effect.map(SqlClient.SqlClient, (sql): LeaseStore => {
  const insert = SqlSchema.single({
    Request: AsGiven<LeaseRow>(),
    Result: LeaseRow,
    execute: (lease) =>
      sql`
        INSERT INTO concurrency_lease (id, created, expiration, resource_ids, slots, holder_type, holder_id)
        VALUES (${lease.id}, ${lease.created}, ${lease.expiration}, ${lease.resource_ids}::uuid[], ${lease.slots},
                ${lease.holder_type}, ${lease.holder_id})
        RETURNING *
      `
  })
  const findRow = findRowBy(sql, "concurrency_lease", "id", LeaseRow)
  const activeRows = SqlSchema.findAll({
    Request: AsGiven<{ readonly at: Date; readonly limit: number; readonly offset: number }>(),
    Result: IdRow,
    execute: ({ at, limit, offset }) =>
      sql`SELECT id FROM concurrency_lease WHERE expiration > ${at} ORDER BY expiration, id LIMIT ${limit} OFFSET ${offset}`
  })
  const expiredRows = SqlSchema.findAll({
    Request: AsGiven<{ readonly at: Date; readonly limit: number }>(),
    Result: IdRow,
    execute: ({ at, limit }) => sql`SELECT id FROM concurrency_lease WHERE expiration < ${at} ORDER BY expiration, id LIMIT ${limit}`
  })
  const heldRows = SqlSchema.findAll({
    Request: AsGiven<{ readonly at: Date; readonly limitId: string }>(),
    Result: LeaseRow,
    execute: ({ at, limitId }) =>
      sql`
        SELECT * FROM concurrency_lease
        WHERE resource_ids @> ARRAY[${limitId}]::uuid[] AND expiration > ${at} AND holder_id IS NOT NULL
        ORDER BY created, id
      `
  })
  const takeRow = SqlSchema.findOne({
    Request: Schema.String,
    Result: LeaseRow,
    execute: (id) => sql`DELETE FROM concurrency_lease WHERE id = ${id} RETURNING *`
  })
  // SKIP LOCKED: two repossessors running together each take different leases, neither waits.
  const takeExpiredRow = SqlSchema.findOne({
    Request: Schema.DateFromSelf,
    Result: LeaseRow,
    execute: (at) =>
      sql`
        DELETE FROM concurrency_lease WHERE id = (
          SELECT id FROM concurrency_lease WHERE expiration < ${at} AND slots IS NOT NULL
          ORDER BY expiration, id LIMIT 1 FOR UPDATE SKIP LOCKED
        )
        RETURNING *
      `
  })
  const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id)

  return sqlErrorsAsDefects({
    create: (resourceIds: ReadonlyArray<string>, ttlSeconds: number, metadata: Parameters<LeaseStore["create"]>[2]) =>
      Effect.gen(function* () {
        const at = yield* now
        const row = yield* insert({
          id: yield* newId,
          created: at,
          expiration: later(at, ttlSeconds),
          resource_ids: resourceIds,
          slots: metadata?.slots ?? null,
          holder_type: metadata?.holder?.type ?? null,
          holder_id: metadata?.holder?.id ?? null
        })
        return toLease(row)
      }),
    find: (id: string) => Effect.map(findRow(id), Option.map(toLease)),
    renew: (id: string, ttlSeconds: number) =>
      Effect.flatMap(now, (at) =>
        Effect.map(
          sql`UPDATE concurrency_lease SET expiration = ${later(at, ttlSeconds)} WHERE id = ${id} RETURNING id`,
          (rows) => rows.length > 0
        )
      ),
    revoke: (id: string) => Effect.asVoid(sql`DELETE FROM concurrency_lease WHERE id = ${id}`),
    take: (id: string) => Effect.map(takeRow(id), Option.map(toLease)),
    takeExpired: sqlErrorAsDefect(Effect.flatMap(now, (at) => Effect.map(takeExpiredRow(at), Option.map(toLease)))),
    activeIds: ({ limit, offset }: { readonly limit: number; readonly offset: number }) =>
      Effect.flatMap(now, (at) => Effect.map(activeRows({ at, limit, offset }), ids)),
    expiredIds: (limit: number) => Effect.flatMap(now, (at) => Effect.map(expiredRows({ at, limit }), ids)),
    holders: (limitId: string) =>
      Effect.flatMap(now, (at) =>
        Effect.map(
          heldRows({ at, limitId }),
          // The statement keeps only rows with a holder.
          (rows) => rows.flatMap((row) => {
            const holder = toLease(row).holder
            return holder === null ? [] : [{ leaseId: row.id, holder }]
          })
        )
      )
  })
})

/** The store `server.concurrency.lease_storage` names. */
export const LeaseStorageLive = Layer.effect(
  LeaseStorage,
  Effect.gen(function* () {
    const choice = (yield* Settings).server.concurrency.lease_storage
    if (choice === "memory") return yield* memoryStore
    if (choice === "database") return yield* databaseStore
    return yield* Effect.dieMessage(
      `server.concurrency.lease_storage: unknown lease storage "${choice}" (expected "memory" or "database")`
    )
  })
)
