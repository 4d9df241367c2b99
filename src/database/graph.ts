/** Reference graphs stored as edge tables (block schemas nesting schemas, documents referencing documents). */
import type { SqlClient } from "@effect/sql"

export interface EdgeTable {
  readonly table: string
  readonly parent: string
  readonly child: string
}

/**
 * Every edge reachable from the nodes `ids`, oldest first, in one recursive query: each with its
 * `name` (the property holding the child), parent and child columns and id; the caller reads them
 * through its row schema.
 */
export const edgesBelow = (sql: SqlClient.SqlClient, edges: EdgeTable, ids: ReadonlyArray<string>) => {
  const table = sql.unsafe(edges.table)
  const parent = sql.unsafe(edges.parent)
  const child = sql.unsafe(edges.child)
  return sql`
    WITH RECURSIVE tree AS (
      SELECT r.* FROM ${table} r WHERE r.${parent} = ANY(${ids}::uuid[])
      UNION
      SELECT r.* FROM ${table} r JOIN tree t ON r.${parent} = t.${child}
    )
    SELECT id, name, ${parent}, ${child} FROM tree ORDER BY created, id
  `
}
