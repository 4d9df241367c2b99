/**
 * Reading a table as a log, in the order its rows became final. Each row carries the transaction
 * that wrote it (`txid`, `pg_current_xact_id()`) and a sequence number (`seq`). A reader takes only
 * rows whose transaction is older than the horizon, the oldest transaction still running that can
 * write to this database: no commit can add a row before them any more, so a reader that moves a
 * position forward over them skips nothing, however the writers' commits interleave. A row newer
 * than that horizon waits until the transactions before it end (usually milliseconds; a
 * long-running writing transaction in this database holds every reader back, one in another
 * database on the same PostgreSQL server does not).
 */
import type { SqlClient, Statement } from "@effect/sql"
import { Effect } from "effect"

/** Where a reader stands: after the row of transaction `txid` numbered `seq` (both as text: xid8 and bigint). */
export interface LogPosition {
  readonly txid: string
  readonly seq: string
}

/**
 * The oldest transaction still running that can write to this database (or the next one): rows of
 * older transactions are final. `baton_log_horizon()` (migration 0028) passes over the transactions
 * of other databases on the same server, which share its transaction ids (about a second after one
 * first holds a reader back: see the migration). A call is a PL/pgSQL function's, so where the first
 * row after a reader's position is known, the readers below make it only when that row is not older
 * than every running transaction (`oldestRunning`, free, never newer than the horizon): that is,
 * only when they would otherwise wait, and once per statement.
 */
export const horizon = (sql: SqlClient.SqlClient) => sql`baton_log_horizon()`

/** The snapshot's oldest running transaction, of any database (or the next one): never newer than the horizon. */
const oldestRunning = (sql: SqlClient.SqlClient) => sql`pg_snapshot_xmin(pg_current_snapshot())`

/**
 * The horizon as a reader whose next row is of transaction `first` (NULL: none; named once, as it
 * may be a subquery) needs it: the oldest running transaction when that row is older (what lies
 * beyond is read at the next look, which asks again), else the horizon itself. A row is final when
 * older than this, pending (committed, waiting for an older transaction) when not.
 */
export const horizonFor = (sql: SqlClient.SqlClient, first: Statement.Fragment) =>
  sql`(CASE WHEN (${first} < ${oldestRunning(sql)}) IS NOT FALSE THEN ${oldestRunning(sql)} ELSE ${horizon(sql)} END)`

/**
 * Whether the row of transaction `first` (xid8; NULL: none) is final (`ready`) or committed behind
 * an older transaction of this database (`pending`, a reader looks again shortly): a subquery of one
 * row, asking the horizon as horizonFor does.
 */
export const look = (sql: SqlClient.SqlClient, first: Statement.Fragment) =>
  sql`(SELECT f.first < f.h AS ready, f.first >= f.h AS pending
    FROM (SELECT first, ${horizonFor(sql, sql`first`)} AS h FROM (SELECT ${first} AS first) named) f)`

/** Rows after `position` that no running transaction can precede any more, in log order by `ORDER BY txid, seq`. */
export const finalAfter = (sql: SqlClient.SqlClient, table: string, position: LogPosition) => {
  const txid = sql`${position.txid}::xid8`
  const seq = sql`${position.seq}::bigint`
  return sql`txid IS NOT NULL AND (txid, seq) > (${txid}, ${seq}) AND txid < (SELECT ${horizonFor(sql, firstAfter(sql, table, txid, seq))})`
}

/** Committed rows after `position` that are not final yet: a transaction older than them still runs. */
export const pendingAfter = (sql: SqlClient.SqlClient, position: LogPosition) =>
  sql`txid IS NOT NULL AND (txid, seq) > (${position.txid}::xid8, ${position.seq}::bigint) AND txid >= ${horizon(sql)}`

/**
 * The txid of the first row of `table` after a position (`txid`, `seq`: SQL, e.g. a joined cursor's
 * columns), or NULL. Rows of older transactions come first in log order, so this one probe of the
 * (txid, seq) index says whether something final follows the position (`< horizon`) or, when not,
 * whether committed rows wait behind a running transaction (`>= horizon`). A scalar subquery,
 * ordered and limited: inside EXISTS PostgreSQL drops the ORDER BY, and as it cannot know how few
 * rows lie past the horizon it then reads the whole table, on every look of every reader.
 */
export const firstAfter = (
  sql: SqlClient.SqlClient,
  table: string,
  txid: Statement.Fragment,
  seq: Statement.Fragment
) => sql`(SELECT txid FROM ${sql(table)} WHERE txid IS NOT NULL AND (txid, seq) > (${txid}, ${seq}) ORDER BY txid, seq LIMIT 1)`

/** The position of a reader that starts now: what is final now is behind it, everything else ahead. */
export const currentPosition = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ txid: string }>`SELECT ${horizon(sql)}::text AS txid`,
    (rows): LogPosition => ({ txid: rows[0]!.txid, seq: "0" })
  )

/** The position of a row read with its `txid::text AS txid` and `seq::text AS seq`. */
export const positionOf = (row: { readonly txid: string; readonly seq: string }): LogPosition => ({ txid: row.txid, seq: row.seq })
