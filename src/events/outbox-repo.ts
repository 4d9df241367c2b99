/**
 * The event outbox in SQL: what a writing transaction says happened (a state transition, a status
 * change), stored with the write, until the relay turns it into events (events/relay.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"

export class EventOutboxRepo extends Effect.Service<EventOutboxRepo>()("baton/EventOutboxRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Stores the notes, in the current transaction when there is one. */
    const add = (notes: ReadonlyArray<unknown>) =>
      notes.length === 0
        ? Effect.void
        : Effect.asVoid(sql`INSERT INTO event_outbox (body) SELECT value FROM jsonb_array_elements(${JSON.stringify(notes)}::jsonb)`)

    /**
     * Removes and returns the oldest `limit` notes no other transaction is taking, oldest first: the
     * caller turns them into events in the same transaction (a rollback puts them back).
     */
    const take = (limit: number) =>
      Effect.map(
        sql<{ id: string; body: unknown }>`
          DELETE FROM event_outbox WHERE id IN (SELECT id FROM event_outbox ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING id, body
        `,
        (rows) => [...rows].sort((a, b) => Number(a.id) - Number(b.id)).map((row) => row.body)
      )

    return sqlErrorsAsDefects({ add, take })
  })
}) {}
