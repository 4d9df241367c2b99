import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Queue } from "effect"
import pg from "pg"
import { realClock } from "../../src/domain/time.ts"
import { ALL_EVENTS, CONSUMER_LOOK_GAP_MS, EventLog, EVENTS_CHANNEL, type EventsHandled, NO_EVENTS } from "../../src/events/log.ts"
import { EventRelay, RELAY_GAP_MS } from "../../src/events/relay.ts"
import { EventsRepo } from "../../src/events/repo.ts"
import type { ReceivedEvent } from "../../src/events/schemas.ts"
import { idOf, ok } from "../support/api.ts"
import { onServer } from "../support/database.ts"
import { request, testServer } from "../support/server.ts"

const event = (name: string): ReceivedEvent => ({
  id: crypto.randomUUID(),
  occurred: new Date("2026-11-27T10:00:00Z"),
  received: new Date("2026-11-27T10:00:01Z"),
  event: name,
  resource: { "prefect.resource.id": `log.${name}` },
  related: [],
  payload: {},
  follows: null
})

/** Text PostgreSQL cannot compress: random base64. */
const randomText = (length: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(length))).toString("base64").slice(0, length)

const realMillis = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** Runs `tick` again and again for the scope's life, counting how many times it completed since `reset`. */
const countedTicks = (tick: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function* () {
    let ticks = 0
    yield* Effect.forkScoped(Effect.forever(Effect.tap(tick, () => Effect.sync(() => void ticks++))))
    return { count: () => ticks, reset: () => void (ticks = 0) }
  })

/** Waits in real time, 50 ms at a time, until `done` or `limitMs` passed; the milliseconds since `since`. */
const realUntil = (done: Effect.Effect<boolean>, since: number, limitMs = 5000) =>
  Effect.gen(function* () {
    for (let waited = 0; !(yield* done) && waited < limitMs; waited += 50) yield* realMillis(50)
    return realClock.unsafeCurrentTimeMillis() - since
  })

describe("the event log", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.scoped("a consumer handles each event once, in order, and its cursor outlives it: another with its name goes on from there", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const seen: Array<string> = []
        const handle = (events: ReadonlyArray<ReceivedEvent>) => Effect.sync(() => void seen.push(...events.map((e) => e.event)))
        const first = yield* log.consumer("test-once", 2, handle)
        yield* log.write([event("a"), event("b"), event("c")])
        expect(yield* first.drain).toBe(3)
        expect(yield* first.drain).toBe(0)
        yield* log.write([event("d")])
        // A second consumer of the same name (another process, a restart) starts where the first stopped.
        const second = yield* log.consumer("test-once", 2, handle)
        expect(yield* second.drain).toBe(1)
        expect(yield* first.drain).toBe(0)
        expect(seen).toEqual(["a", "b", "c", "d"])
      })
    )

    it.scoped("a consumer that handles some events reads only those: its cursor passes the others by, and none it handles is missed", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const sql = yield* SqlClient.SqlClient
        const seen: Array<string> = []
        const handle = (events: ReadonlyArray<ReceivedEvent>) => Effect.sync(() => void seen.push(...events.map((e) => e.event)))
        let handles: EventsHandled = { prefix: "wanted." }
        const consumer = yield* log.consumer("test-some", 3, handle, undefined, Effect.sync(() => handles))
        const cursor = sql<{ seq: string }>`SELECT seq::text AS seq FROM event_consumer WHERE name = 'test-some'`
        // Others first (more than a batch of them), then one it handles amid others, then others again.
        yield* log.write(["x1", "x2", "x3", "x4", "wanted.a", "x5", "wanted.b", "x6", "x7"].map(event))
        expect(yield* consumer.drain).toBe(9)
        // The batch (of 3) began at the first event it handles: "x5" came with it, the others did not.
        expect(seen).toEqual(["wanted.a", "x5", "wanted.b"])
        const after = (yield* cursor)[0]!.seq
        // Handling none now: the cursor moves over everything, unread.
        handles = NO_EVENTS
        yield* log.write(["wanted.c", "x8"].map(event))
        expect(yield* consumer.drain).toBe(2)
        expect(seen).toHaveLength(3)
        expect(Number((yield* cursor)[0]!.seq)).toBeGreaterThan(Number(after))
        // All again: what comes next is handled.
        handles = ALL_EVENTS
        yield* log.write(["y1"].map(event))
        expect(yield* consumer.drain).toBe(1)
        expect(seen.at(-1)).toBe("y1")
        expect(yield* consumer.drain).toBe(0)
      })
    )

    it.scoped("a consumer's look at a long log probes the log's index: no look reads the whole table", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const repo = yield* EventsRepo
        const sql = yield* SqlClient.SqlClient
        // A log of 20,000 events (a few days of a busy server keep millions), its statistics current.
        yield* sql`
          INSERT INTO events (id, occurred, event, resource_id, resource, received, recorded)
          SELECT gen_random_uuid(), now(), 'filler.' || i, 'filler', '{}'::jsonb, now(), now() FROM generate_series(1, 20000) i
        `
        yield* sql`ANALYZE events`
        const handleNothing = () => Effect.void
        const all = yield* log.consumer("test-look-all", 500, handleNothing)
        const some = yield* log.consumer("test-look-some", 500, handleNothing, undefined, Effect.succeed({ prefix: "wanted." }))
        const none = yield* log.consumer("test-look-none", 500, handleNothing, undefined, Effect.succeed(NO_EVENTS))
        for (const consumer of [all, some, none]) yield* consumer.drain
        const position = yield* repo.position()
        // The scans of `events` this transaction made, before the server's statistics have them.
        const scans = Effect.map(
          sql<{ seq: string; index: string }>`
            SELECT seq_scan::text AS seq, coalesce(idx_scan, 0)::text AS index FROM pg_stat_xact_user_tables WHERE relname = 'events'
          `,
          (rows) => ({ seq: Number(rows[0]?.seq ?? 0), index: Number(rows[0]?.index ?? 0) })
        )
        const looked = yield* sql.withTransaction(Effect.gen(function* () {
          const before = yield* scans
          const states = [
            yield* repo.consumerState("test-look-all"),
            yield* repo.skipUnhandled("test-look-some", 500, "wanted."),
            yield* repo.skipUnhandled("test-look-none", 500, null),
            yield* repo.lookAfter(position)
          ]
          const after = yield* scans
          return { states, seq: after.seq - before.seq, index: after.index - before.index }
        }))
        // Every consumer is at the end of the log: nothing ready, nothing waiting.
        for (const state of looked.states) expect({ ready: state.ready, pending: state.pending }).toEqual({ ready: false, pending: false })
        expect(looked.seq).toBe(0)
        expect(looked.index).toBeGreaterThanOrEqual(4)
      })
    )

    it.scoped("what a batch writes commits with the cursor: a failing batch is handed again, nothing of it kept", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const sql = yield* SqlClient.SqlClient
        let attempts = 0
        const consumer = yield* log.consumer("test-rollback", 10, (events) =>
          Effect.gen(function* () {
            attempts++
            // Written by the batch: an event of its own, in its transaction (not for the echoes themselves).
            yield* log.write(events.filter((e) => !e.event.startsWith("echo-")).map((e) => event(`echo-${e.event}-${attempts}`)))
            if (attempts === 1) return yield* Effect.fail("the first try fails")
          }))
        yield* log.write([event("x")])
        expect(yield* Effect.flip(consumer.drain)).toBe("the first try fails")
        // `x` again, then the echo its second try wrote.
        expect(yield* consumer.drain).toBe(2)
        const echoes = yield* sql<{ event: string }>`SELECT event FROM events WHERE event LIKE 'echo-x-%' ORDER BY event`
        expect(echoes.map((row) => row.event)).toEqual(["echo-x-2"])
      })
    )

    // Two connections at once: the embedded database serves one.
    it.scoped.skipIf(!onServer())("a consumer skips no event when commits finish out of order: a later one waits for the earlier", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const repo = yield* EventsRepo
        const sql = yield* SqlClient.SqlClient
        const seen: Array<string> = []
        const consumer = yield* log.consumer("test-order", 100, (events) => Effect.sync(() => void seen.push(...events.map((e) => e.event))))
        // `early` is written first (an older transaction) but commits last.
        const written = yield* Deferred.make<void>()
        const commit = yield* Deferred.make<void>()
        const early = yield* sql.withTransaction(
          Effect.zipRight(repo.write([event("early")]), Effect.zipRight(Deferred.succeed(written, undefined), Deferred.await(commit)))
        ).pipe(Effect.fork)
        yield* Deferred.await(written)
        yield* log.write([event("late")])
        const draining = yield* Effect.fork(consumer.drain)
        // Long enough for the log's horizon to ask whose transaction `early`'s is (after a second): this database's.
        yield* realMillis(1500)
        // `late` is committed, but not final while `early`'s transaction runs: nothing is handled yet.
        expect(seen).toEqual([])
        yield* Deferred.succeed(commit, undefined)
        yield* Fiber.join(early)
        yield* Fiber.join(draining)
        yield* consumer.drain
        expect(seen).toEqual(["early", "late"])
      })
    )

    // Transaction ids are the PostgreSQL server's: one running in the server's other databases is older than the events.
    it.scoped.skipIf(!onServer())("a writing transaction in another database on the same server holds no consumer back", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const seen: Array<string> = []
        const consumer = yield* log.consumer("test-other-database", 100, (events) => Effect.sync(() => void seen.push(...events.map((e) => e.event))))
        // A session of the server's own database (TEST_DATABASE_URL's, not this test's) holds a transaction id, as a long load there would.
        const other = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
            await client.connect()
            await client.query("BEGIN")
            const held = await client.query<{ xid: string }>("SELECT pg_current_xact_id()::text AS xid")
            return { client, xid: held.rows[0]!.xid }
          }),
          ({ client }) => Effect.promise(() => client.query("ROLLBACK").then(() => client.end()))
        )
        yield* log.write([event("after")])
        const sql = yield* SqlClient.SqlClient
        const [written] = yield* sql<{ txid: string }>`SELECT txid::text AS txid FROM events WHERE event = 'after'`
        // The event's transaction is newer than the one still running there …
        expect(BigInt(written!.txid)).toBeGreaterThan(BigInt(other.xid))
        // … and it is final here all the same, once the log's horizon has asked whose the older one is
        // (about a second after it first held a look back).
        expect(yield* consumer.drain).toBe(1)
        expect(seen).toEqual(["after"])
      })
    )

    // Two connections at once: the embedded database serves one.
    it.scoped.skipIf(!onServer())("a live subscriber gets a committed event at once, though an older transaction still runs, and once", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const repo = yield* EventsRepo
        const sql = yield* SqlClient.SqlClient
        const live = yield* log.subscribe
        const written = yield* Deferred.make<void>()
        const commit = yield* Deferred.make<void>()
        const older = yield* sql.withTransaction(
          Effect.zipRight(repo.write([event("older")]), Effect.zipRight(Deferred.succeed(written, undefined), Deferred.await(commit)))
        ).pipe(Effect.fork)
        yield* Deferred.await(written)
        yield* log.write([event("newer")])
        const first = yield* Queue.take(live).pipe(Effect.timeout("2 seconds"), Effect.withClock(realClock))
        expect(first.event).toBe("newer")
        yield* Deferred.succeed(commit, undefined)
        yield* Fiber.join(older)
        // The older event comes once its transaction commits (its NOTIFY is sent without one here: the next look finds it).
        yield* log.write([event("last")])
        const rest: Array<string> = []
        while (rest.length < 2) rest.push((yield* Queue.take(live).pipe(Effect.timeout("7 seconds"), Effect.withClock(realClock))).event)
        expect(rest.sort()).toEqual(["last", "older"])
        expect(yield* Queue.size(live)).toBe(0)
      })
    )

    // Announcements through PostgreSQL are made on a server only (the embedded database serves this process alone).
    it.scoped.skipIf(!onServer())("a write wakes this process's readers once: its own announcement does not wake them again, another process's does", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const sql = yield* SqlClient.SqlClient
        const consumer = yield* log.consumer("test-wakes", 100, () => Effect.void)
        let looks = 0
        yield* Effect.forkScoped(Effect.forever(Effect.tap(consumer.tick, () => Effect.sync(() => void looks++))))
        // Whatever earlier tests left to wake it has passed.
        yield* realMillis(500)
        looks = 0
        yield* log.write([event("woken-once")])
        // Its NOTIFY arrives within milliseconds of the commit: time enough for a second look, if it woke one.
        yield* realMillis(700)
        expect(looks).toBe(1)
        // Another process's announcement (a payload not this process's) wakes the readers.
        yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, 'written another-process')`
        for (let waited = 0; looks < 2 && waited < 3000; waited += 50) yield* realMillis(50)
        expect(looks).toBe(2)
      })
    )

    it.scoped("a consumer woken by write after write looks at most once a gap, and handles every event", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const handled: Array<string> = []
        const consumer = yield* log.consumer("test-spaced", 500, (events) => Effect.sync(() => void handled.push(...events.map((e) => e.event))))
        const looks = yield* countedTicks(consumer.tick)
        yield* realMillis(500)
        looks.reset()
        handled.length = 0
        // A write every few milliseconds for a second, each waking the consumer: without the gap it
        // looks again as soon as a look ends, dozens of times.
        const started = realClock.unsafeCurrentTimeMillis()
        let written = 0
        while (realClock.unsafeCurrentTimeMillis() - started < 1000) {
          yield* log.write([event(`spaced-${written++}`)])
          yield* realMillis(2)
        }
        const elapsed = yield* realUntil(Effect.sync(() => handled.length >= written), started)
        expect(handled).toEqual(Array.from({ length: written }, (_, i) => `spaced-${i}`))
        // On PostgreSQL, 67 looks in a second without the gap, 11 with it (on the embedded database
        // its one connection spaces the looks out anyway).
        expect(CONSUMER_LOOK_GAP_MS).toBe(100)
        expect(looks.count()).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 1)
      })
    )

    it.scoped("the relay, woken by commit after commit, relays at most once a gap, and every note becomes its event", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const relay = yield* EventRelay
        yield* relay.drain
        const relays = yield* countedTicks(relay.tick)
        yield* realMillis(300)
        relays.reset()
        // Task runs made one after the other for a second, each commit waking the relay: without the
        // gap it relays about once a commit (50 times on PostgreSQL, 21 on the embedded database).
        const started = realClock.unsafeCurrentTimeMillis()
        const ids: Array<string> = []
        while (realClock.unsafeCurrentTimeMillis() - started < 1000) {
          ids.push(idOf(ok(yield* request("POST", "/task_runs/", { body: { task_key: "spaced", dynamic_key: String(ids.length) } }), 201)))
        }
        const elapsed = yield* realUntil(
          Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM event_outbox`, (rows) => rows[0]!.n === 0).pipe(Effect.orDie),
          started
        )
        const stored = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM events WHERE event = 'prefect.task-run.Pending' AND resource_id IN ${sql.in(ids.map((id) => `prefect.task-run.${id}`))}
        `
        expect(stored[0]!.n).toBe(ids.length)
        expect(RELAY_GAP_MS).toBe(100)
        expect(relays.count()).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 1)
      })
    )

    it.effect("an event the database refuses is dropped by the relay, and the transitions after it still become events", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const relay = yield* EventRelay
        yield* relay.drain
        // A task run accepts this state name, but as an event name it is too large for the events'
        // index (random text: PostgreSQL cannot compress it to fit).
        const name = randomText(2656)
        const refused = idOf(ok(yield* request("POST", "/task_runs/", { body: { task_key: "big", dynamic_key: "1" } }), 201))
        ok(yield* request("POST", `/task_runs/${refused}/set_state`, { body: { state: { type: "RUNNING", name }, force: true } }), 201)
        const after = idOf(ok(yield* request("POST", "/task_runs/", { body: { task_key: "small", dynamic_key: "1" } }), 201))
        ok(yield* request("POST", `/task_runs/${after}/set_state`, { body: { state: { type: "RUNNING" } } }), 201)

        yield* relay.drain
        const eventsOf = (id: string) =>
          sql<{ event: string }>`SELECT event FROM events WHERE resource_id = ${`prefect.task-run.${id}`} ORDER BY occurred, seq`
        expect((yield* eventsOf(after)).map((row) => row.event)).toEqual(["prefect.task-run.Pending", "prefect.task-run.Running"])
        expect((yield* eventsOf(refused)).map((row) => row.event)).toEqual(["prefect.task-run.Pending"])
        expect(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM event_outbox`).toEqual([{ n: 0 }])
      })
    )
  })
})
