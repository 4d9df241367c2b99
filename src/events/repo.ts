/** Events in SQL: written in batches (each once), read and counted by EventFilter. */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { currentPosition, finalAfter, firstAfter, horizon, horizonFor, look, type LogPosition, pendingAfter, positionOf } from "../database/log-order.ts"
import { idAt } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { bucketMillis, type Countable, PIVOT, type TimeUnit } from "./counting.ts"
import { compileEventFilter, type ResolvedEventFilter } from "./filter.ts"
import { type ReceivedEvent, resourceId, resourceRole } from "./schemas.ts"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { traced } from "../domain/traced.ts"

// Rows typed and decoded by hand, not through a row schema (SqlSchema): writing and reading events is on the hot path (the bench's POST /events and run lifecycle).
interface EventRow {
  readonly id: string
  readonly occurred: Date
  readonly event: string
  readonly resource: Record<string, string>
  readonly related: ReadonlyArray<Record<string, string>>
  readonly payload: Record<string, unknown>
  readonly received: Date
  readonly follows: string | null
}

const toEvent = (row: EventRow): ReceivedEvent => ({
  id: row.id,
  occurred: row.occurred,
  event: row.event,
  resource: row.resource,
  related: row.related,
  payload: row.payload,
  received: row.received,
  follows: row.follows
})

/** A resource's labels without its id and role, which have columns of their own. */
const otherLabels = (resource: Record<string, string>) => {
  const { "prefect.resource.id": _id, "prefect.resource.role": _role, ...rest } = resource
  return rest
}

/**
 * The rows `write` stores for `events`: each event's, and a row per resource of it (its own, role
 * "", and each related one) with the resource's other labels, stamped `recordedMs`.
 */
export const eventRows = (events: ReadonlyArray<ReceivedEvent>, recordedMs: number) => {
  const rows: Array<Record<string, unknown>> = []
  const resourceRows: Array<Record<string, unknown>> = []
  for (const e of events) {
    const occurred = e.occurred.toISOString()
    rows.push({
      id: e.id,
      occurred,
      event: e.event,
      resource_id: resourceId(e.resource),
      resource: e.resource,
      related_resource_ids: e.related.map(resourceId),
      related: e.related,
      payload: e.payload,
      received: e.received.toISOString(),
      follows: e.follows
    })
    const resourceRow = (resource: Record<string, string>, role: string) =>
      resourceRows.push({
        id: idAt(recordedMs),
        occurred,
        resource_id: resourceId(resource),
        resource_role: role,
        resource: otherLabels(resource),
        event_id: e.id
      })
    resourceRow(e.resource, "")
    for (const related of e.related) resourceRow(related, resourceRole(related))
  }
  return { rows, resourceRows }
}

/** A consumer's cursor as a batch finds it. */
export type ConsumerCursor =
  | { readonly _tag: "Locked"; readonly position: LogPosition }
  | { readonly _tag: "Busy" }
  | { readonly _tag: "Missing" }

/** An event read from the log, with where it stands in it. */
export interface LoggedEvent {
  readonly event: ReceivedEvent
  readonly position: LogPosition
}

/** Rows per insert statement. */
export const INSERT_BATCH = 500

export interface RawCount {
  readonly value: string
  readonly label: string
  readonly count: number
  readonly start_time: Date
  readonly end_time: Date
}

export class EventsRepo extends Effect.Service<EventsRepo>()("baton/EventsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /**
     * Stores the events not stored yet (by id) and their resources, in the caller's transaction
     * (EventLog.write opens one for more than one statement): a statement per INSERT_BATCH events.
     * With `announce`, a statement that stored one also sends that notification (sent at the commit,
     * once per transaction).
     */
    const write = traced("EventsRepo.write")(function* (
      events: ReadonlyArray<ReceivedEvent>,
      announce?: { readonly channel: string; readonly payload: string }
    ) {
      if (events.length === 0) return 0
      const recorded = yield* now
      // The resources' ids, stamped when the events are recorded.
      const recordedMs = recorded.getTime()
      let written = 0
      for (let i = 0; i < events.length; i += INSERT_BATCH) {
        const { rows, resourceRows } = eventRows(events.slice(i, i + INSERT_BATCH), recordedMs)
        // One statement: the events not stored yet, and the resources of those alone.
        const inserted = yield* sql<{ id: string }>`
          WITH inserted AS (
            INSERT INTO events (id, occurred, event, resource_id, resource, related_resource_ids, related, payload, received, recorded, follows)
            SELECT r.id, r.occurred, r.event, r.resource_id, r.resource, r.related_resource_ids, r.related, r.payload, r.received,
                   ${recorded}, r.follows
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
              id uuid, occurred timestamptz, event text, resource_id text, resource jsonb, related_resource_ids jsonb,
              related jsonb, payload jsonb, received timestamptz, follows uuid)
            ON CONFLICT (id) DO NOTHING
            RETURNING id
          ), resources AS (
            INSERT INTO event_resources (id, occurred, resource_id, resource_role, resource, event_id)
            SELECT r.id, r.occurred, r.resource_id, r.resource_role, r.resource, r.event_id
            FROM jsonb_to_recordset(${JSON.stringify(resourceRows)}::jsonb) AS r(
              id uuid, occurred timestamptz, resource_id text, resource_role text, resource jsonb, event_id uuid)
            WHERE r.event_id IN (SELECT id FROM inserted)
          ), announced AS (
            SELECT pg_notify(${announce?.channel ?? null}, ${announce?.payload ?? null})
            WHERE ${announce !== undefined} AND EXISTS (SELECT 1 FROM inserted)
          )
          SELECT id, (SELECT count(*) FROM announced) AS announced FROM inserted
        `
        written += inserted.length
      }
      return written
    })

    /** The number of events the filter matches (of distinct resources, when it asks for distinct ones). */
    const count = (filter: ResolvedEventFilter) =>
      Effect.map(
        filter.resource?.distinct
          ? sql<{ count: string }>`SELECT count(DISTINCT events.resource_id) AS count FROM events WHERE ${compileEventFilter(sql, filter)}`
          : sql<{ count: string }>`SELECT count(*) AS count FROM events WHERE ${compileEventFilter(sql, filter)}`,
        (rows) => Number(rows[0]!.count)
      )

    /** A page of the events the filter matches, by time in its order (the latest of each resource when distinct). */
    const read = (filter: ResolvedEventFilter, limit: number, offset: number) => {
      const direction = sql.unsafe(filter.order === "ASC" ? "ASC" : "DESC")
      const where = compileEventFilter(sql, filter)
      const rows = filter.resource?.distinct
        ? sql<EventRow>`
            SELECT * FROM (
              SELECT events.*, row_number() OVER (PARTITION BY events.resource_id ORDER BY events.occurred ${direction}, events.id ${direction}) AS n
              FROM events WHERE ${where}
            ) events WHERE n = 1
            ORDER BY occurred ${direction}, id ${direction} LIMIT ${limit} OFFSET ${offset}
          `
        : sql<EventRow>`
            SELECT * FROM events WHERE ${where}
            ORDER BY events.occurred ${direction}, events.id ${direction} LIMIT ${limit} OFFSET ${offset}
          `
      return Effect.map(rows, (found) => found.map(toEvent))
    }

    /**
     * Counts per bucket of time (day, time), per event name, or per resource (labelled with its
     * latest name); time buckets come oldest first, the others most frequent first.
     */
    const countBy = (filter: ResolvedEventFilter, countable: Countable, unit: TimeUnit, interval: number) => {
      const where = compileEventFilter(sql, filter)
      const byTime = countable === "day" || countable === "time"
      const seconds = bucketMillis(countable === "day" ? "day" : unit, countable === "day" ? 1 : interval) / 1000
      const bin = sql`date_bin(make_interval(secs => ${seconds}), events.occurred, ${PIVOT})`
      const value = byTime
        ? sql`floor(extract(epoch FROM (${bin} - ${PIVOT}::timestamptz)) / ${seconds})::bigint::text`
        : countable === "event"
        ? sql`events.event`
        : sql`events.resource_id`
      const label = byTime
        ? sql`to_char(${bin} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`
        : countable === "event"
        ? sql`events.event`
        : sql`coalesce(events.resource ->> 'prefect.resource.name', events.resource ->> 'prefect.name', events.resource_id)`
      const order = byTime ? sql`start_time ASC` : sql`count DESC, label ASC`
      return Effect.map(
        sql<{ value: string; label: string; count: string; start_time: Date; end_time: Date }>`
          WITH counted AS (
            SELECT ${value} AS value, ${label} AS label, max(events.occurred) AS latest, min(events.occurred) AS oldest, count(*) AS count
            FROM events WHERE ${where} GROUP BY 1, 2
          ), labelled AS (
            SELECT value, first_value(label) OVER (PARTITION BY value ORDER BY latest DESC) AS label, latest, oldest, count FROM counted
          )
          SELECT value, label, sum(count) AS count, min(oldest) AS start_time, max(latest) AS end_time
          FROM labelled GROUP BY value, label ORDER BY ${order}
        `,
        (rows): ReadonlyArray<RawCount> => rows.map((r) => ({ ...r, count: Number(r.count) }))
      )
    }

    /** Which of these event ids are stored. */
    const existing = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([] as ReadonlyArray<string>)
        : Effect.map(sql<{ id: string }>`SELECT id FROM events WHERE id = ANY(${ids}::uuid[])`, (rows) => rows.map((r) => r.id))

    /** Deletes up to `limit` events (and their resources) that occurred before `before`; how many. */
    const deleteOlderThan = traced("EventsRepo.deleteOlderThan")(function* (before: Date, limit: number) {
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const deleted = yield* sql<{ id: string }>`
            DELETE FROM events WHERE id IN (SELECT id FROM events WHERE occurred < ${before} ORDER BY occurred LIMIT ${limit})
            RETURNING id
          `
          if (deleted.length > 0) {
            yield* sql`DELETE FROM event_resources WHERE event_id = ANY(${deleted.map((d) => d.id)}::uuid[])`
          }
          return deleted.length
        })
      )
    })

    /** Up to `limit` events after `position` in log order (database/log-order.ts), each with its position. */
    const readAfter = (position: LogPosition, limit: number) =>
      Effect.map(
        sql<EventRow & { readonly txid: string; readonly seq: string }>`
          SELECT id, occurred, event, resource, related, payload, received, follows, txid::text AS txid, seq::text AS seq
          FROM events WHERE ${finalAfter(sql, "events", position)}
          ORDER BY events.txid, events.seq LIMIT ${limit}
        `,
        (rows): ReadonlyArray<LoggedEvent> => rows.map((row) => ({ event: toEvent(row), position: positionOf(row) }))
      )

    /** Up to `limit` events after `position` that are committed but not final yet (for live readers, which may not wait). */
    const readPendingAfter = (position: LogPosition, limit: number) =>
      Effect.map(
        sql<EventRow>`
          SELECT id, occurred, event, resource, related, payload, received, follows
          FROM events WHERE ${pendingAfter(sql, position)}
          ORDER BY events.txid, events.seq LIMIT ${limit}
        `,
        (rows) => rows.map(toEvent)
      )

    /**
     * What follows `position`: `ready` when something final does (to read now), else `pending` when
     * committed events wait for an older transaction (a reader should look again shortly).
     */
    const lookAfter = (position: LogPosition) =>
      Effect.map(
        sql<{ ready: boolean | null; pending: boolean | null }>`
          SELECT ready, pending FROM ${look(sql, firstAfter(sql, "events", sql`${position.txid}::xid8`, sql`${position.seq}::bigint`))} next
        `,
        (rows) => ({ ready: rows[0]!.ready === true, pending: rows[0]!.pending === true })
      )

    /** The log's position now, for a reader that starts here. */
    const position = currentPosition(sql)

    /** Makes the consumer's cursor (at the log's position now) unless it has one. */
    const ensureConsumer = (name: string) =>
      sql`
        INSERT INTO event_consumer (name, txid, seq) VALUES (${name}, ${horizon(sql)}, 0)
        ON CONFLICT (name) DO NOTHING
      `.pipe(Effect.asVoid)

    /**
     * The consumer's cursor, locked for the current transaction; Busy when another transaction holds
     * it (another process consumes now), Missing when the consumer has none.
     */
    const lockConsumer = (name: string) =>
      Effect.flatMap(
        sql<{ txid: string; seq: string }>`
          SELECT txid::text AS txid, seq::text AS seq FROM event_consumer WHERE name = ${name} FOR UPDATE SKIP LOCKED
        `,
        (rows): Effect.Effect<ConsumerCursor, SqlError> =>
          rows[0] !== undefined
            ? Effect.succeed({ _tag: "Locked", position: positionOf(rows[0]) })
            : Effect.map(
              sql`SELECT 1 FROM event_consumer WHERE name = ${name}`,
              (found): ConsumerCursor => (found.length > 0 ? { _tag: "Busy" } : { _tag: "Missing" })
            )
      )

    /**
     * Where consumer `name` stands, without locking its cursor: whether it has one, whether final
     * events wait after it, and (when none do) whether committed ones wait for an older transaction.
     * One statement and one index probe, so an idle consumer looks cheaply.
     */
    const consumerState = (name: string) =>
      Effect.map(
        sql<{ known: boolean; ready: boolean | null; pending: boolean | null }>`
          SELECT c.name IS NOT NULL AS known, next.ready, next.pending
          FROM (SELECT 1) one
          LEFT JOIN event_consumer c ON c.name = ${name}
          LEFT JOIN LATERAL ${look(sql, firstAfter(sql, "events", sql`c.txid`, sql`c.seq`))} next ON true
        `,
        (rows) => ({ known: rows[0]!.known, ready: rows[0]!.ready === true, pending: rows[0]!.pending === true })
      )

    /**
     * Moves consumer `name`'s cursor over the final events after it that it does not handle (those
     * whose name does not start with `prefix`; every one when `prefix` is null), up to `limit` of
     * them and up to the first it handles, in one statement under its cursor's lock (taken as
     * lockConsumer takes it: skipped when another transaction holds it). Whether it has a cursor,
     * whether the lock was free, how many were passed over, whether one it handles comes next
     * (final: `ready`), and what follows the last one looked at: more final events (`more`: the
     * batch was full) or, when not, committed ones waiting for an older transaction (`pending`).
     * So a consumer that handles none of what came needs this one look.
     */
    const skipUnhandled = (name: string, limit: number, prefix: string | null) =>
      Effect.map(
        sql<{ known: boolean; locked: boolean; skipped: number; ready: boolean; more: boolean | null; pending: boolean | null }>`
          WITH cursor AS (
            SELECT txid, seq FROM event_consumer WHERE name = ${name} FOR UPDATE SKIP LOCKED
          ), bound AS (
            SELECT ${horizonFor(sql, firstAfter(sql, "events", sql`cursor.txid`, sql`cursor.seq`))} AS h FROM cursor
          ), batch AS (
            SELECT e.txid, e.seq, e.event FROM cursor, LATERAL (
              SELECT txid, seq, event FROM events
              WHERE txid IS NOT NULL AND (txid, seq) > (cursor.txid, cursor.seq) AND txid < (SELECT h FROM bound)
              ORDER BY txid, seq LIMIT ${limit}
            ) e
          ), handled AS (
            SELECT txid, seq FROM batch WHERE starts_with(event, ${prefix}) ORDER BY txid, seq LIMIT 1
          ), skipped AS (
            SELECT txid, seq FROM batch
            WHERE NOT EXISTS (SELECT 1 FROM handled WHERE (batch.txid, batch.seq) >= (handled.txid, handled.seq))
          ), last AS (
            SELECT txid, seq FROM skipped ORDER BY txid DESC, seq DESC LIMIT 1
          ), moved AS (
            UPDATE event_consumer SET txid = last.txid, seq = last.seq, updated = now() FROM last
            WHERE event_consumer.name = ${name} RETURNING 1
          ), looked AS (
            SELECT coalesce(b.txid, cursor.txid) AS txid, coalesce(b.seq, cursor.seq) AS seq
            FROM cursor LEFT JOIN LATERAL (SELECT txid, seq FROM batch ORDER BY txid DESC, seq DESC LIMIT 1) b ON true
          ), next AS (
            SELECT ${firstAfter(sql, "events", sql`looked.txid`, sql`looked.seq`)} AS txid FROM looked
          )
          SELECT EXISTS (SELECT 1 FROM event_consumer WHERE name = ${name}) AS known,
            EXISTS (SELECT 1 FROM cursor) AS locked, (SELECT count(*)::int FROM skipped) AS skipped,
            EXISTS (SELECT 1 FROM handled) AS ready,
            (SELECT next.txid < bound.h FROM next, bound) AS more, (SELECT next.txid >= bound.h FROM next, bound) AS pending,
            (SELECT count(*) FROM moved) AS moved
        `,
        (rows) => ({ ...rows[0]!, more: rows[0]!.more === true, pending: rows[0]!.pending === true })
      )

    const advanceConsumer = (name: string, to: LogPosition) =>
      sql`UPDATE event_consumer SET txid = ${to.txid}::xid8, seq = ${to.seq}::bigint, updated = now() WHERE name = ${name}`.pipe(Effect.asVoid)

    // A failed write is a defect too: the persister retries the ones that say the database is
    // unavailable (unavailabilityAsFailure), and only those.
    return sqlErrorsAsDefects({
      write,
      count,
      read,
      countBy,
      existing,
      deleteOlderThan,
      readAfter,
      readPendingAfter,
      lookAfter,
      position: () => position,
      ensureConsumer,
      consumerState,
      lockConsumer,
      skipUnhandled,
      advanceConsumer
    })
  })
}) {}
