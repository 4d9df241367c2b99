/**
 * Watches node-postgres for statements handed to a connection while it still runs another (which
 * node-postgres queues with a deprecation warning on stderr, and its next major version refuses).
 */
import { Effect } from "effect"
import pg from "pg"

/** node-postgres's own record of what a client runs (read directly: its `activeQuery` getter warns). */
type Watched = pg.Client & { readonly _activeQuery?: unknown; readonly _queryQueue?: ReadonlyArray<unknown> }

/**
 * The texts of the statements `ours` picks that were sent on a busy connection while the scope is
 * open; statements of anything else in the process are left out.
 */
export const overlappingQueries = (ours: (text: string) => boolean) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const seen: Array<string> = []
      const query = pg.Client.prototype.query
      pg.Client.prototype.query = function(this: Watched, ...args: Array<unknown>) {
        const text = String(typeof args[0] === "string" ? args[0] : (args[0] as { text?: string })?.text)
        if (ours(text) && (this._activeQuery != null || (this._queryQueue?.length ?? 0) > 0)) seen.push(text)
        return (query as (...a: Array<unknown>) => unknown).apply(this, args)
      } as typeof query
      return { seen, query }
    }),
    ({ query }) => Effect.sync(() => void (pg.Client.prototype.query = query))
  ).pipe(Effect.map(({ seen }) => seen))
