import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Deployments and flow runs name block documents (storage, infrastructure): those must exist, and
 * a deleted document leaves them without one (SET NULL) rather than deleting them. NOT VALID leaves
 * ids stored before blocks existed as they are; only new writes are checked.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const links = [
    ["deployment", "storage_document_id"],
    ["deployment", "infrastructure_document_id"],
    ["flow_run", "infrastructure_document_id"]
  ] as const
  for (const [table, column] of links) {
    yield* sql.unsafe(
      `ALTER TABLE ${table} ADD CONSTRAINT fk_${table}__${column} FOREIGN KEY (${column})
       REFERENCES block_document (id) ON DELETE SET NULL NOT VALID`
    )
    // Deleting a document looks its users up.
    yield* sql.unsafe(`CREATE INDEX ix_${table}__${column} ON ${table} (${column}) WHERE ${column} IS NOT NULL`)
  }
})
