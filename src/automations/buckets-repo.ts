/**
 * Trigger buckets and composite child firings in SQL. A bucket counts the events one event trigger
 * saw for one for_each key inside one window [start, end); there is at most one per automation,
 * trigger and key, so every write is an upsert on that key.
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Effect } from "effect"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import type { ReceivedEvent } from "../events/schemas.ts"

export interface Bucket {
  readonly automation_id: string
  readonly trigger_id: string
  readonly bucketing_key: ReadonlyArray<string>
  readonly last_event: ReceivedEvent | null
  readonly start: Date
  readonly end: Date
  readonly count: number
  readonly triggered_at: Date | null
}

export interface BucketKey {
  readonly automationId: string
  readonly triggerId: string
  readonly key: ReadonlyArray<string>
}

/** A stored event's dates come back as strings: make them Dates again. */
const revive = (event: any): ReceivedEvent | null =>
  event === null ? null : { ...event, occurred: new Date(event.occurred), received: new Date(event.received) }

const toBucket = (row: any): Bucket => ({ ...row, count: Number(row.count), last_event: revive(row.last_event) })

export interface ChildFiring {
  readonly child_trigger_id: string
  readonly child_firing_id: string
  readonly child_fired_at: Date
  readonly child_firing: unknown
}

export class BucketsRepo extends Effect.Service<BucketsRepo>()("baton/BucketsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const COLUMNS = sql`automation_id, trigger_id, bucketing_key, last_event, start, "end", count, triggered_at`

    const matches = (b: BucketKey) =>
      sql`automation_id = ${b.automationId} AND trigger_id = ${b.triggerId} AND bucketing_key = ${JSON.stringify(b.key)}::jsonb`

    const read = (b: BucketKey) =>
      Effect.map(sql`SELECT ${COLUMNS} FROM automation_bucket WHERE ${matches(b)}`, (rows) => (rows[0] ? toBucket(rows[0]) : undefined))

    /** Writes a bucket row; on the key's conflict applies `onConflict` (SQL over the stored row and EXCLUDED). */
    const upsert = (
      b: BucketKey,
      values: { start: Date; end: Date; count: number; lastEvent: ReceivedEvent | null; triggeredAt?: Date | null; operation: string },
      onConflict: Statement.Fragment
    ) =>
      Effect.gen(function* () {
        const at = yield* now
        const rows = yield* sql`
          INSERT INTO automation_bucket
            (id, created, updated, automation_id, trigger_id, bucketing_key, last_event, start, "end", count, last_operation, triggered_at)
          VALUES (${yield* newId}, ${at}, ${at}, ${b.automationId}, ${b.triggerId}, ${JSON.stringify(b.key)}::jsonb,
                  ${values.lastEvent === null ? null : JSON.stringify(values.lastEvent)}::jsonb, ${values.start}, ${values.end},
                  ${values.count}, ${values.operation}, ${values.triggeredAt ?? null})
          ON CONFLICT (automation_id, trigger_id, bucketing_key) DO UPDATE SET ${onConflict}, updated = EXCLUDED.updated
          RETURNING ${COLUMNS}
        `
        return toBucket(rows[0])
      })

    /** The key's bucket as it is, or a new one with these values; a given event becomes its last. */
    const ensure = (b: BucketKey, start: Date, end: Date, lastEvent: ReceivedEvent | null, initialCount = 0) =>
      upsert(
        b,
        { start, end, count: initialCount, lastEvent, operation: "ensure_bucket[insert]" },
        lastEvent === null ? sql`count = automation_bucket.count` : sql`last_event = EXCLUDED.last_event`
      )

    /** The key's bucket becomes exactly this window and count. */
    const startNew = (b: BucketKey, start: Date, end: Date, count: number, lastEvent: ReceivedEvent | null, triggeredAt: Date | null) =>
      upsert(
        b,
        { start, end, count, lastEvent, triggeredAt, operation: "start_new_bucket[insert]" },
        sql`start = EXCLUDED.start, "end" = EXCLUDED."end", count = EXCLUDED.count, last_event = EXCLUDED.last_event,
            triggered_at = EXCLUDED.triggered_at, last_operation = 'start_new_bucket[update]'`
      )

    /** Adds `count` to the bucket (an event, when given, becomes its last). */
    const increment = (bucket: Bucket, count: number, lastEvent: ReceivedEvent | null) =>
      upsert(
        { automationId: bucket.automation_id, triggerId: bucket.trigger_id, key: bucket.bucketing_key },
        { start: bucket.start, end: bucket.end, count, lastEvent, operation: "increment_bucket[insert]" },
        lastEvent === null
          ? sql`count = automation_bucket.count + ${count}, last_operation = 'increment_bucket[update]'`
          : sql`count = automation_bucket.count + ${count}, last_event = EXCLUDED.last_event, last_operation = 'increment_bucket[update]'`
      )

    const remove = (bucket: Bucket) =>
      sql`DELETE FROM automation_bucket WHERE ${matches({ automationId: bucket.automation_id, triggerId: bucket.trigger_id, key: bucket.bucketing_key })}`

    /** The trigger's buckets, oldest window first. */
    const forTrigger = (automationId: string, triggerId: string) =>
      Effect.map(
        sql`SELECT ${COLUMNS} FROM automation_bucket WHERE automation_id = ${automationId} AND trigger_id = ${triggerId} ORDER BY start`,
        (rows) => rows.map(toBucket)
      )

    /** Buckets that already hold enough events and will not fire this window (and are not waiting to resolve). */
    const removeSatisfied = (automationId: string, triggerId: string, threshold: number) =>
      sql`DELETE FROM automation_bucket
          WHERE automation_id = ${automationId} AND trigger_id = ${triggerId} AND count >= ${threshold} AND triggered_at IS NULL`

    /** Buckets whose window closed before `before`. */
    const sweep = (before: Date) => sql`DELETE FROM automation_bucket WHERE "end" <= ${before}`

    // Composite triggers ------------------------------------------------------------------------

    /** Serialises evaluations of one composite trigger within the transaction. */
    const lockComposite = (triggerId: string) => sql`SELECT pg_advisory_xact_lock(hashtext(${triggerId}))`

    /** Keeps the child's newest firing for the parent. */
    const upsertChildFiring = (automationId: string, parentId: string, childId: string, firingId: string, firedAt: Date, firing: unknown) =>
      Effect.gen(function* () {
        const at = yield* now
        yield* sql`
          INSERT INTO composite_trigger_child_firing
            (id, created, updated, automation_id, parent_trigger_id, child_trigger_id, child_firing_id, child_fired_at, child_firing)
          VALUES (${yield* newId}, ${at}, ${at}, ${automationId}, ${parentId}, ${childId}, ${firingId}, ${firedAt}, ${JSON.stringify(firing)}::jsonb)
          ON CONFLICT (automation_id, parent_trigger_id, child_trigger_id) DO UPDATE SET
            child_firing_id = EXCLUDED.child_firing_id, child_fired_at = EXCLUDED.child_fired_at,
            child_firing = EXCLUDED.child_firing, updated = EXCLUDED.updated
        `
      })

    const childFirings = (automationId: string, parentId: string) =>
      sql<ChildFiring>`
        SELECT child_trigger_id, child_firing_id, child_fired_at, child_firing FROM composite_trigger_child_firing
        WHERE automation_id = ${automationId} AND parent_trigger_id = ${parentId}
      `

    const clearOldChildFirings = (automationId: string, parentId: string, before: Date) =>
      sql`DELETE FROM composite_trigger_child_firing
          WHERE automation_id = ${automationId} AND parent_trigger_id = ${parentId} AND child_fired_at < ${before}`

    /** Deletes these firings; the ids actually deleted (another evaluation may have claimed some). */
    const claimChildFirings = (automationId: string, parentId: string, firingIds: ReadonlyArray<string>) =>
      Effect.map(
        sql<{ child_firing_id: string }>`
          DELETE FROM composite_trigger_child_firing
          WHERE automation_id = ${automationId} AND parent_trigger_id = ${parentId} AND child_firing_id = ANY(${firingIds}::uuid[])
          RETURNING child_firing_id
        `,
        (rows) => rows.map((r) => r.child_firing_id)
      )

    return {
      read,
      ensure,
      startNew,
      increment,
      remove,
      forTrigger,
      removeSatisfied,
      sweep,
      lockComposite,
      upsertChildFiring,
      childFirings,
      clearOldChildFirings,
      claimChildFirings
    } as const
  })
}) {}
