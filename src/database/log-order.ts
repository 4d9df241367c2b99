/**
 * Reading a table as a log, in the order its rows became final. Each row carries the transaction
 * that wrote it (`txid`, `pg_current_xact_id()`) and a sequence number (`seq`). A reader takes only
 * rows whose transaction is older than the oldest transaction still running: no commit can add a row
 * before them any more, so a reader that moves a position forward over them skips nothing, however
 * the writers' commits interleave. A row newer than that horizon waits until the transactions
 * before it end (usually milliseconds; a long-running writing transaction holds every reader back).
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Where a reader stands: after the row of transaction `txid` numbered `seq` (both as text: xid8 and bigint). */
export interface LogPosition {
  readonly txid: string
  readonly seq: string
}

/** The oldest transaction still running (or the next one): rows of older transactions are final. */
export const horizon = (sql: SqlClient.SqlClient) => sql`pg_snapshot_xmin(pg_current_snapshot())`

/** Rows after `position` that no running transaction can precede any more, in log order by `ORDER BY txid, seq`. */
export const finalAfter = (sql: SqlClient.SqlClient, position: LogPosition) =>
  sql`txid IS NOT NULL AND (txid, seq) > (${position.txid}::xid8, ${position.seq}::bigint) AND txid < ${horizon(sql)}`

/** Committed rows after `position` that are not final yet: a transaction older than them still runs. */
export const pendingAfter = (sql: SqlClient.SqlClient, position: LogPosition) =>
  sql`txid IS NOT NULL AND (txid, seq) > (${position.txid}::xid8, ${position.seq}::bigint) AND txid >= ${horizon(sql)}`

/** The position of a reader that starts now: what is final now is behind it, everything else ahead. */
export const currentPosition = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ txid: string }>`SELECT ${horizon(sql)}::text AS txid`,
    (rows): LogPosition => ({ txid: rows[0]!.txid, seq: "0" })
  )

/** The position of a row read with its `txid::text AS txid` and `seq::text AS seq`. */
export const positionOf = (row: { readonly txid: string; readonly seq: string }): LogPosition => ({ txid: row.txid, seq: row.seq })
