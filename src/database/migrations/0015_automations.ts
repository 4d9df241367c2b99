import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Automations; the resources they relate to (deployments they run, the resource that owns them);
 * the open trigger buckets (one per automation, trigger and for_each key) and the child firings a
 * compound or sequence trigger is collecting. Buckets and firings go with their automation.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE automation (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      enabled boolean NOT NULL DEFAULT true,
      tags jsonb NOT NULL DEFAULT '[]'::jsonb,
      trigger jsonb NOT NULL,
      actions jsonb NOT NULL DEFAULT '[]'::jsonb,
      actions_on_trigger jsonb NOT NULL DEFAULT '[]'::jsonb,
      actions_on_resolve jsonb NOT NULL DEFAULT '[]'::jsonb
    )
  `
  yield* sql`CREATE INDEX ix_automation__name ON automation (name)`
  yield* sql`CREATE INDEX ix_automation__updated ON automation (updated)`
  yield* sql`
    CREATE TABLE automation_related_resource (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      automation_id uuid NOT NULL REFERENCES automation (id) ON DELETE CASCADE,
      resource_id text NOT NULL,
      automation_owned_by_resource boolean NOT NULL DEFAULT false
    )
  `
  yield* sql`CREATE UNIQUE INDEX uq_automation_related_resource__automation_id__resource_id ON automation_related_resource (automation_id, resource_id)`
  yield* sql`CREATE INDEX ix_automation_related_resource__resource_id ON automation_related_resource (resource_id)`
  yield* sql`
    CREATE TABLE automation_bucket (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      automation_id uuid NOT NULL REFERENCES automation (id) ON DELETE CASCADE,
      trigger_id uuid NOT NULL,
      bucketing_key jsonb NOT NULL DEFAULT '[]'::jsonb,
      last_event jsonb,
      start timestamptz NOT NULL,
      "end" timestamptz NOT NULL,
      count integer NOT NULL,
      last_operation text,
      triggered_at timestamptz
    )
  `
  yield* sql`CREATE UNIQUE INDEX uq_automation_bucket__automation_id__trigger_id__bucketing_key ON automation_bucket (automation_id, trigger_id, bucketing_key)`
  yield* sql`CREATE INDEX ix_automation_bucket__automation_id__end ON automation_bucket (automation_id, "end")`
  yield* sql`CREATE INDEX ix_automation_bucket__end ON automation_bucket ("end")`
  yield* sql`
    CREATE TABLE composite_trigger_child_firing (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      automation_id uuid NOT NULL REFERENCES automation (id) ON DELETE CASCADE,
      parent_trigger_id uuid NOT NULL,
      child_trigger_id uuid NOT NULL,
      child_firing_id uuid NOT NULL,
      child_fired_at timestamptz NOT NULL,
      child_firing jsonb NOT NULL
    )
  `
  yield* sql`CREATE UNIQUE INDEX uq_composite_trigger_child_firing__a_id__pt_id__ct_id ON composite_trigger_child_firing (automation_id, parent_trigger_id, child_trigger_id)`
})
