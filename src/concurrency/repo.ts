/**
 * Global concurrency limits (concurrency_limit_v2) in SQL. Slots decay: a limit with
 * `slot_decay_per_second` frees that many slots a second (a rate limit), and denied slots decay too
 * (at one per average occupancy for plain limits); decay is measured from `updated`, which every
 * change moves, as the reference measures it.
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { isUniqueViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven } from "../database/rows.ts"
import { ConcurrencyLimitNameTaken } from "./errors.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Settings } from "../settings/settings.ts"
import { traced } from "../domain/traced.ts"

/**
 * A row of `concurrency_limit_v2` (v1's tag limits are its rows named `tag:…`), with its active slots
 * once decay is taken off. Its own schema, not the wire's: the wire answers the decayed slots.
 */
export const GlobalConcurrencyLimitRow = Schema.Struct({
  id: Schema.String,
  created: Schema.DateFromSelf,
  updated: Schema.DateFromSelf,
  active: Schema.Boolean,
  name: Schema.String,
  limit: Schema.Number,
  /** As stored, before decay. */
  active_slots: Schema.Number,
  denied_slots: Schema.Number,
  slot_decay_per_second: Schema.Number,
  avg_slot_occupancy_seconds: Schema.Number,
  /** Active slots once decay since `updated` is taken off. */
  decayed_active_slots: Schema.Number
})
export type GlobalConcurrencyLimitRow = typeof GlobalConcurrencyLimitRow.Type

interface LimitQuery {
  readonly condition: Statement.Fragment
  readonly tail?: Statement.Fragment
}

/** The least time a slot counts as held, for the occupancy average. */
const MINIMUM_OCCUPANCY_SECONDS_PER_SLOT = 0.1

export class ConcurrencyLimitsRepo extends Effect.Service<ConcurrencyLimitsRepo>()("baton/ConcurrencyLimitsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* Settings
    const tagWait = settings.server.tasks.tag_concurrency_slot_wait_seconds
    const maxWait = settings.server.concurrency.maximum_concurrency_slot_wait_seconds

    const elapsed = (at: Date) => sql`GREATEST(0, EXTRACT(EPOCH FROM (${at}::timestamptz - concurrency_limit_v2.updated)))`
    const activeAfterDecay = (at: Date) =>
      sql`GREATEST(0, concurrency_limit_v2.active_slots - FLOOR(concurrency_limit_v2.slot_decay_per_second * ${elapsed(at)}))::int`
    const deniedAfterDecay = (at: Date) =>
      sql`GREATEST(0, concurrency_limit_v2.denied_slots - FLOOR(
        (CASE WHEN concurrency_limit_v2.slot_decay_per_second > 0 THEN concurrency_limit_v2.slot_decay_per_second
          ELSE 1.0 / GREATEST(0.1, LEAST(concurrency_limit_v2.avg_slot_occupancy_seconds,
            CASE WHEN concurrency_limit_v2.name LIKE 'tag:%' THEN ${tagWait}::float8 ELSE ${maxWait}::float8 END)) END)
        * ${elapsed(at)}))::int`

    /** The limits that meet `condition`, with their decayed slots. */
    const selectLimits = (query: LimitQuery) =>
      Effect.flatMap(now, (at) =>
        sql`
          SELECT concurrency_limit_v2.*, ${activeAfterDecay(at)} AS decayed_active_slots
          FROM concurrency_limit_v2 WHERE ${query.condition} ${query.tail ?? sql``}
        `
      )
    const select = SqlSchema.findAll({ Request: AsGiven<LimitQuery>(), Result: GlobalConcurrencyLimitRow, execute: selectLimits })
    const selectOne = SqlSchema.findOne({ Request: AsGiven<LimitQuery>(), Result: GlobalConcurrencyLimitRow, execute: selectLimits })

    const find = (id: string) => selectOne({ condition: sql`id = ${id}` })
    const findByName = (name: string) => selectOne({ condition: sql`name = ${name}` })
    const readByNames = (names: ReadonlyArray<string>) =>
      select({ condition: sql`name = ANY(${names}::text[])`, tail: sql`ORDER BY name` })

    const list = (options: { readonly offset: number; readonly limit: number; readonly prefix?: string }) =>
      select({
        condition: options.prefix === undefined ? sql`TRUE` : sql`name LIKE ${options.prefix + "%"}`,
        tail: sql`ORDER BY name LIMIT ${options.limit} OFFSET ${options.offset}`
      })

    const create = traced("ConcurrencyLimitsRepo.create")(function* (input: {
      readonly name: string
      readonly limit: number
      readonly active?: boolean
      readonly active_slots?: number
      readonly denied_slots?: number
      readonly slot_decay_per_second?: number
    }) {
      const id = yield* newId
      const at = yield* now
      yield* sql`
        INSERT INTO concurrency_limit_v2 (id, created, updated, name, "limit", active, active_slots, denied_slots, slot_decay_per_second)
        VALUES (${id}, ${at}, ${at}, ${input.name}, ${input.limit}, ${input.active ?? true}, ${input.active_slots ?? 0},
                ${input.denied_slots ?? 0}, ${input.slot_decay_per_second ?? 0})
      `.pipe(Effect.catchIf(isUniqueViolation, () => new ConcurrencyLimitNameTaken()))
      return id
    })

    /**
     * Sets the given columns (no decay is kept: `updated` moves); false when there is no such limit,
     * ConcurrencyLimitNameTaken when another limit has the new name.
     */
    const update = (id: string, changes: Readonly<Record<string, unknown>>) =>
      Effect.flatMap(now, (at) =>
        Effect.map(
          sql`UPDATE concurrency_limit_v2 SET ${sql.update({ ...changes, updated: at })} WHERE id = ${id} RETURNING id`.pipe(
            Effect.catchIf(isUniqueViolation, () => new ConcurrencyLimitNameTaken())
          ),
          (rows) => rows.length > 0
        )
      )

    const setLimit = (id: string, limit: number) => update(id, { limit })

    const remove = (id: string) =>
      Effect.map(sql`DELETE FROM concurrency_limit_v2 WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    /**
     * Takes `slots` on every one of the limits, or on none: true when all had room. Call inside a
     * transaction and roll back on false (rows that had room were already updated).
     */
    const increment = (ids: ReadonlyArray<string>, slots: number) =>
      Effect.flatMap(now, (at) =>
        Effect.map(
          sql`
            UPDATE concurrency_limit_v2 SET active_slots = ${activeAfterDecay(at)} + ${slots},
              denied_slots = ${deniedAfterDecay(at)}, updated = ${at}
            WHERE id = ANY(${ids}::uuid[]) AND active AND ${activeAfterDecay(at)} + ${slots} <= "limit"
            RETURNING id
          `,
          (rows) => rows.length === ids.length
        )
      )

    /**
     * Gives back `slots` on the (active) limits, never below 0; with `occupancySeconds`, the time they
     * were held moves the occupancy average. True when every limit was found active.
     */
    const decrement = (ids: ReadonlyArray<string>, slots: number, occupancySeconds?: number | null) =>
      Effect.flatMap(now, (at) => {
        const perSlot = occupancySeconds ? Math.max(occupancySeconds / slots, MINIMUM_OCCUPANCY_SECONDS_PER_SLOT) : null
        return Effect.map(
          sql`
            UPDATE concurrency_limit_v2 SET active_slots = GREATEST(0, ${activeAfterDecay(at)} - ${slots}),
              denied_slots = ${deniedAfterDecay(at)}, updated = ${at}
              ${perSlot === null ? sql`` : sql`, avg_slot_occupancy_seconds = avg_slot_occupancy_seconds
                + ${perSlot}::float8 / ("limit" * 2) - avg_slot_occupancy_seconds / ("limit" * 2)`}
            WHERE id = ANY(${ids}::uuid[]) AND active
            RETURNING id
          `,
          (rows) => rows.length === ids.length
        )
      })

    /** Counts `slots` more denied on each (active) limit. */
    const deny = (ids: ReadonlyArray<string>, slots: number) =>
      Effect.flatMap(now, (at) =>
        sql`
          UPDATE concurrency_limit_v2 SET denied_slots = ${deniedAfterDecay(at)} + ${slots}, updated = ${at}
          WHERE id = ANY(${ids}::uuid[]) AND active
        `
      )

    return sqlErrorsAsDefects({ find, findByName, readByNames, list, create, update, setLimit, remove, increment, decrement, deny })
  })
}) {}
