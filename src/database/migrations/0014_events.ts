import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Events, and one row per resource an event involves (its own, role '', and each related one with
 * its role), which is what filters on labels and related resources search.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE events (
      id uuid PRIMARY KEY,
      occurred timestamptz NOT NULL,
      event text NOT NULL,
      resource_id text NOT NULL,
      resource jsonb NOT NULL,
      related_resource_ids jsonb NOT NULL DEFAULT '[]'::jsonb,
      related jsonb NOT NULL DEFAULT '[]'::jsonb,
      payload jsonb NOT NULL DEFAULT '{}'::jsonb,
      received timestamptz NOT NULL,
      recorded timestamptz NOT NULL,
      follows uuid
    )
  `
  yield* sql`CREATE INDEX ix_events__occurred_id ON events (occurred, id)`
  yield* sql`CREATE INDEX ix_events__event_occurred_id ON events (event, occurred, id)`
  yield* sql`CREATE INDEX ix_events__resource_id_occurred ON events (resource_id, occurred)`
  yield* sql`
    CREATE TABLE event_resources (
      id uuid PRIMARY KEY,
      occurred timestamptz NOT NULL,
      resource_id text NOT NULL,
      resource_role text NOT NULL,
      resource jsonb NOT NULL,
      event_id uuid NOT NULL
    )
  `
  yield* sql`CREATE INDEX ix_event_resources__resource_id__occurred ON event_resources (resource_id, occurred)`
  yield* sql`CREATE INDEX ix_event_resources__occurred ON event_resources (occurred)`
  yield* sql`CREATE INDEX ix_event_resources__event_id ON event_resources (event_id)`
})
