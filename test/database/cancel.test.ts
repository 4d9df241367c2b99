/**
 * A fiber interrupted while its statement runs (a client that went away mid-request, a service
 * stopping) lets go at once, and the pool serves the next statement, even when the interrupted
 * statement holds the pool's only connection (always so on the embedded database): the statement's
 * cancel never waits for a pooled connection (src/database/client.ts's StatementCancel). Its
 * connection goes back to the pool once the statement has ended, so no statement is ever handed a
 * connection that is still running another.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Array as Arr, Context, Deferred, Duration, Effect, Exit, Fiber, FiberId, Layer, Option } from "effect"
import pg from "pg"
import { DatabasePool, MAX_CANCELS_IN_FLIGHT } from "../../src/database/client.ts"
import { StatementsLive } from "../../src/database/statements.ts"
import * as Settings from "../../src/settings/settings.ts"
import { transaction } from "../../src/database/transactions.ts"
import { onServer, type ScopedDatabase, scopedDatabase } from "../support/database.ts"
import { overlappingQueries } from "../support/overlapping-queries.ts"

// On a server the statement would run for seconds unless cancelled; the embedded database runs it
// to its end whatever happens (the next statement waits behind it), so it is kept short there.
const SLEEP_SECONDS = onServer() ? 3 : 0.5
// Without the fix, the cancel waited 5 s for the pool's only connection (for ever under TestClock).
const LETS_GO_WITHIN = Duration.seconds(2)

/** This test's own statements (the process may be running others). */
const ours = (text: string) => /SELECT 1 AS one|pg_sleep|interrupted-write|FROM flow WHERE name/.test(text)

/**
 * The two ways a statement runs: as @effect/sql runs it (with a span, the tracer on), and the
 * server's default short way (no span: src/database/statements.ts), which outside a transaction
 * runs it on the pool directly (src/database/client.ts). Either way the same behaviour.
 */
const paths = [
  { path: "as @effect/sql runs it", tracer: true },
  { path: "the short way", tracer: false }
] as const

/**
 * A client of `maxConnections` on `database`, with the short way installed (it is per process) and
 * the statements made outside a transaction counted as the pool's views of a connection handed out:
 * none the short way.
 */
const connected = (database: ScopedDatabase, maxConnections: number) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(database.connect({ maxConnections }))
    yield* Layer.build(StatementsLive.pipe(Layer.provide(Layer.merge(Layer.succeedContext(context), Settings.layer()))))
    const pool = Context.get(context, DatabasePool).use as pg.Pool
    const connect = pool.connect
    const views = { handedOut: 0 }
    pool.connect = function(this: pg.Pool, ...args: Array<unknown>) {
      views.handedOut++
      return (connect as (...a: Array<unknown>) => unknown).apply(this, args)
    } as typeof pool.connect
    return { context, views }
  })

/** The statements running on `url`'s database right now whose text is LIKE `pattern`, as PostgreSQL sees them. */
const runningLike = (url: string, pattern: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      const { rows } = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()",
        [pattern]
      )
      return rows[0]!.n
    } finally {
      await client.end()
    }
  })

/** The statements sleeping (`pg_sleep`) on `url`'s database right now. */
const sleepsRunning = (url: string) => runningLike(url, "SELECT pg_sleep%")

describe.each(paths)("an interrupted statement, $path", ({ tracer }) => {
  it.scopedLive("lets its fiber go at once and leaves the pool's only connection to the next statement, alone or in a transaction", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: true })
      const { context, views } = yield* connected(database, 1)
      const seen = yield* overlappingQueries(ours)
      const sql = Context.get(context, SqlClient.SqlClient)
      const pool = Context.get(context, DatabasePool).use
      const flows = (name: string) => Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM flow WHERE name = ${name}`, (rows) => rows[0]!.n)

      const cases = {
        alone: (started: Deferred.Deferred<void>) => Effect.zipRight(Deferred.succeed(started, undefined), sql`SELECT pg_sleep(${SLEEP_SECONDS})`),
        "in a transaction": (started: Deferred.Deferred<void>) =>
          transaction(
            sql,
            Effect.gen(function* () {
              yield* sql`INSERT INTO flow (id, created, updated, name) VALUES (gen_random_uuid(), now(), now(), 'interrupted-write')`
              yield* Deferred.succeed(started, undefined)
              yield* sql`SELECT pg_sleep(${SLEEP_SECONDS})`
            })
          )
      }
      for (const [name, statement] of Object.entries(cases)) {
        const started = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(statement(started))
        yield* Deferred.await(started)
        // The statement is on its way: the pool's one connection is taken.
        for (let i = 0; i < 1000 && !(pool.totalCount === 1 && pool.idleCount === 0); i++) yield* Effect.sleep(Duration.millis(1))
        expect(pool.idleCount, name).toBe(0)
        // On a server, running: PostgreSQL drops a cancel that comes while the session still waits
        // for its statement (a loaded machine can be that slow), and the sleep would run its course.
        if (onServer()) {
          for (let i = 0; i < 500 && (yield* sleepsRunning(database.url!)) === 0; i++) yield* Effect.sleep(Duration.millis(5))
          expect(yield* sleepsRunning(database.url!), name).toBe(1)
        }

        const [took, exit] = yield* Effect.timed(Fiber.interrupt(fiber).pipe(Effect.timeoutOption(Duration.seconds(10))))
        expect(Option.map(exit, Exit.isInterrupted), name).toEqual(Option.some(true))
        expect(Duration.toMillis(took), name).toBeLessThan(Duration.toMillis(LETS_GO_WITHIN))

        const [next, rows] = yield* Effect.timed(sql<{ one: number }>`SELECT 1 AS one`)
        expect(rows, name).toEqual([{ one: 1 }])
        expect(Duration.toMillis(next), name).toBeLessThan(Duration.toMillis(LETS_GO_WITHIN))
      }
      // The interrupted transaction wrote nothing.
      expect(yield* flows("interrupted-write")).toBe(0)
      // Each statement after an interrupted one waited for the connection to be idle, not on it.
      expect(seen).toEqual([])
      // Four statements outside the transaction and the transaction itself: the short way takes a
      // view of a connection for the transaction only.
      expect(views.handedOut).toBe(tracer ? 5 : 1)
    }).pipe(Effect.withTracerEnabled(tracer)), { timeout: 60_000 })

  describe.runIf(onServer())("on a server", () => {
    it.scopedLive(`interrupted together, at most ${MAX_CANCELS_IN_FLIGHT} are cancelled at once, each on a connection of its own; the others run to their end`, () =>
      Effect.gen(function* () {
        const database = yield* scopedDatabase({ migrated: true })
        const statements = MAX_CANCELS_IN_FLIGHT + 2
        const { context } = yield* connected(database, statements)
        const sql = Context.get(context, SqlClient.SqlClient)
        const pool = Context.get(context, DatabasePool).use
        const running = runningLike(database.url!, "%interrupted-together%")

        const fibers = yield* Effect.forEach(Arr.range(1, statements), () => Effect.fork(sql`SELECT pg_sleep(5) /* interrupted-together */`))
        for (let i = 0; i < 1000 && !(pool.totalCount === statements && pool.idleCount === 0); i++) yield* Effect.sleep(Duration.millis(1))
        for (let i = 0; i < 100 && (yield* running) < statements; i++) yield* Effect.sleep(Duration.millis(10))
        expect(yield* running).toBe(statements)

        const [took] = yield* Effect.timed(Fiber.interruptAll(fibers))
        expect(Duration.toMillis(took)).toBeLessThan(Duration.toMillis(LETS_GO_WITHIN))
        // The cancelled ones end within moments; the others sleep on.
        let left = statements
        for (let i = 0; i < 100 && left > statements - MAX_CANCELS_IN_FLIGHT; i++) {
          yield* Effect.sleep(Duration.millis(20))
          left = yield* running
        }
        yield* Effect.sleep(Duration.millis(200))
        expect(yield* running).toBe(statements - MAX_CANCELS_IN_FLIGHT)
        // The two left running keep their connections until they end: more statements than the other
        // connections take turns on those, never queue on a running one.
        const seen = yield* overlappingQueries(ours)
        const answers = yield* Effect.forEach(Arr.range(1, statements - 1), () => sql<{ one: number }>`SELECT 1 AS one`, { concurrency: "unbounded" })
        expect(answers.flat()).toEqual(Arr.replicate({ one: 1 }, statements - 1))
        expect(seen).toEqual([])
      }).pipe(Effect.withTracerEnabled(tracer)), { timeout: 60_000 })

    /**
     * Runs `first` on the pool's only connection with `second` waiting for it, and interrupts
     * `first`'s fiber as its answer comes in; `answer` decides when the answer is then handed on
     * (the interruption is asked for before it either way). Gives both fibers' exits and the cancels
     * the pool was asked to send.
     */
    const interruptedAsAnswered = (answer: (handOn: () => void, cancelsAsked: () => number) => void) =>
      Effect.gen(function* () {
        const database = yield* scopedDatabase({ migrated: true })
        const { context } = yield* connected(database, 1)
        const sql = Context.get(context, SqlClient.SqlClient)
        const pool = Context.get(context, DatabasePool).use as pg.Pool
        let cancels = 0
        const poolQuery = pool.query
        pool.query = function(this: pg.Pool, ...args: Array<unknown>) {
          if (typeof args[0] === "string" && args[0].startsWith("SELECT pg_cancel_backend")) cancels++
          return (poolQuery as (...a: Array<unknown>) => unknown).apply(this, args)
        } as typeof pool.query
        let firstFiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
        const query = pg.Client.prototype.query
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            pg.Client.prototype.query = function(this: pg.Client, ...args: Array<unknown>) {
              const [text, , callback] = args
              if (typeof text === "string" && text.includes("first-on-connection") && typeof callback === "function") {
                args[2] = (...result: Array<unknown>) => {
                  firstFiber!.unsafeInterruptAsFork(FiberId.none)
                  answer(() => (callback as (...a: Array<unknown>) => void)(...result), () => cancels)
                }
              }
              return (query as (...a: Array<unknown>) => unknown).apply(this, args)
            } as typeof query
          }),
          () => Effect.sync(() => void (pg.Client.prototype.query = query))
        )
        const first = yield* Effect.fork(sql`SELECT pg_sleep(0.2) /* first-on-connection */`)
        firstFiber = first
        for (let i = 0; i < 1000 && !(pool.totalCount === 1 && pool.idleCount === 0); i++) yield* Effect.sleep(Duration.millis(1))
        const second = yield* Effect.fork(sql<{ slept: string }>`SELECT pg_sleep(0.3)::text AS slept /* second-on-connection */`)
        for (let i = 0; i < 1000 && pool.waitingCount === 0; i++) yield* Effect.sleep(Duration.millis(1))
        expect(pool.waitingCount).toBe(1)
        return { first: yield* Fiber.await(first), second: yield* Fiber.await(second), cancels }
      }).pipe(Effect.withTracerEnabled(tracer))

    it.scopedLive("a statement interrupted as it answered sends no cancel: the connection has gone on to the next statement", () =>
      Effect.gen(function* () {
        const { cancels, first, second } = yield* interruptedAsAnswered((handOn) => handOn())
        // The interruption won over the answer. As @effect/sql runs it, the fiber still asks for a
        // cancel, after its answer had given the connection back, and the pool does not send it;
        // the short way cancels only a statement still waiting when its fiber ends, so asks none.
        expect(Exit.isInterrupted(first)).toBe(true)
        expect(cancels).toBe(tracer ? 1 : 0)
        expect(second).toEqual(Exit.succeed([{ slept: "" }]))
      }), { timeout: 30_000 })

    it.scopedLive("a connection whose statement answers while its cancel is on the way goes on only once the cancel has returned", () =>
      Effect.gen(function* () {
        const { cancels, first, second } = yield* interruptedAsAnswered((handOn, cancelsAsked) => {
          // The answer is handed on once the interrupted fiber has asked for its cancel.
          const wait = () => (cancelsAsked() > 0 ? handOn() : setImmediate(wait))
          wait()
        })
        expect(Exit.isInterrupted(first)).toBe(true)
        expect(cancels).toBe(1)
        expect(second).toEqual(Exit.succeed([{ slept: "" }]))
      }), { timeout: 30_000 })
  })
})
