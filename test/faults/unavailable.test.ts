/**
 * The one mapping of "the database is unavailable" failures: which failures count (connection-class
 * errors, PostgreSQL's shutdown and connection SQLSTATEs, the pool's acquire timeout, a statement
 * cancelled by its timeout), the 503 with Retry-After a request answers with wherever such a failure
 * happens (a handler's defect or failure, a middleware's statement), and the background services
 * that log it in one line and go on. The database really going away is test/faults/database-away.test.ts.
 */
import { HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { SqlError } from "@effect/sql/SqlError"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Fiber, Layer, Logger, Ref, Schema, TestClock } from "effect"
import { unavailability, unavailabilityAsFailure } from "../../src/database/errors.ts"
import { BatonApi } from "../../src/api.ts"
import { RETRY_AFTER_SECONDS } from "../../src/http/unavailable.ts"
import { GroupsLive } from "../../src/server.ts"
import { defineService, loop } from "../../src/services/runner.ts"
import { request, testServer } from "../support/server.ts"

/** A driver error as node-postgres makes them: a message, and a code (a SQLSTATE or a socket's errno). */
const driverError = (message: string, code?: string) => Object.assign(new Error(message), code === undefined ? {} : { code })

const sqlError = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

const failures: Record<string, unknown> = {
  refused: sqlError(Object.assign(driverError("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"), { syscall: "connect" })),
  reset: sqlError(driverError("read ECONNRESET", "ECONNRESET")),
  terminated: sqlError(driverError("Connection terminated unexpectedly")),
  acquireTimeout: new SqlError({ cause: driverError("timeout exceeded when trying to connect"), message: "Failed to acquire connection" }),
  poolConnectTimeout: new SqlError({
    cause: new Error("Connection terminated due to connection timeout", { cause: driverError("Connection terminated unexpectedly") }),
    message: "Failed to acquire connection"
  }),
  adminShutdown: sqlError(driverError("terminating connection due to administrator command", "57P01")),
  startingUp: sqlError(driverError("the database system is starting up", "57P03")),
  connectionFailure: sqlError(driverError("connection failure", "08006")),
  tooManyConnections: sqlError(driverError("sorry, too many clients already", "53300")),
  embeddedSocketGone: sqlError(Object.assign(driverError("connect ENOENT /tmp/x/.s.PGSQL.5432", "ENOENT"), { syscall: "connect" })),
  statementTimeout: sqlError(driverError("canceling statement due to statement timeout", "57014")),
  deadlock: sqlError(driverError("deadlock detected", "40P01"))
}

const bugs: Record<string, unknown> = {
  syntax: sqlError(driverError("syntax error at or near \"SELEC\"", "42601")),
  missingColumn: sqlError(driverError("column \"nope\" does not exist", "42703")),
  fileNotFound: sqlError(Object.assign(driverError("ENOENT: no such file", "ENOENT"), { syscall: "open" })),
  plain: new Error("a bug"),
  nothing: undefined
}

describe("which failures mean the database is unavailable", () => {
  it("connection-class errors, shutdown and connection SQLSTATEs, acquire timeouts: unreachable", () => {
    for (const name of [
      "refused", "reset", "terminated", "acquireTimeout", "poolConnectTimeout", "adminShutdown", "startingUp",
      "connectionFailure", "tooManyConnections", "embeddedSocketGone"
    ]) {
      expect([name, unavailability(failures[name])]).toEqual([name, "unreachable"])
    }
  })

  it("a statement cancelled by its timeout or a deadlock: busy (a retry may succeed)", () => {
    expect(unavailability(failures.statementTimeout)).toBe("busy")
    expect(unavailability(failures.deadlock)).toBe("busy")
  })

  it("a wrong statement, a bug, or nothing at all: not unavailability", () => {
    for (const [name, error] of Object.entries(bugs)) expect([name, unavailability(error)]).toEqual([name, undefined])
  })

  it.effect("a lost connection a transaction turned into a defect (its ROLLBACK failed too) is a failure again, for a retry", () =>
    Effect.gen(function* () {
      const lost = yield* Effect.exit(unavailabilityAsFailure(Effect.die(failures.terminated)))
      expect(Exit.isFailure(lost) && Cause.failureOption(lost.cause)._tag).toBe("Some")
      let attempts = 0
      const retried = yield* unavailabilityAsFailure(
        Effect.suspend(() => (++attempts < 3 ? Effect.die(failures.adminShutdown) : Effect.succeed("written")))
      ).pipe(Effect.retry({ times: 5 }))
      expect([retried, attempts]).toEqual(["written", 3])
      const bug = yield* Effect.exit(unavailabilityAsFailure(Effect.die(bugs.syntax)))
      expect(Exit.isFailure(bug) && Cause.isDie(bug.cause)).toBe(true)
    })
  )
})

/** Endpoints that fail the way a statement does when the database is away. */
class FaultsApi extends HttpApiGroup.make("faults")
  .add(HttpApiEndpoint.get("dies", "/faults/dies/:name").setPath(Schema.Struct({ name: Schema.String })).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.post("fails", "/faults/fails/:name").setPath(Schema.Struct({ name: Schema.String })).addSuccess(Schema.Void))
{}

const FaultedApi = BatonApi.add(FaultsApi)

const lookup = (name: string) => (name in failures ? failures[name] : bugs[name])

const FaultsLive = HttpApiBuilder.group(FaultedApi, "faults", (handlers) =>
  handlers
    // Handlers turn a failed statement into a defect (Effect.orDie): the common case.
    .handle("dies", ({ path }) => Effect.die(lookup(path.name)))
    // A failure nobody declared, in the error channel.
    .handle("fails", ({ path }) => Effect.fail(lookup(path.name)) as unknown as Effect.Effect<void>)
)

const FaultedHandlers = HttpApiBuilder.api(FaultedApi).pipe(Layer.provide([GroupsLive, FaultsLive]))

describe("a request whose statement fails because the database is unavailable", () => {
  it.layer(testServer({ api: { api: FaultedApi, handlers: FaultedHandlers } }), { timeout: 60_000 })((it) => {
    it.effect("answers 503 with Retry-After and a JSON detail, for every kind of unavailability", () =>
      Effect.gen(function* () {
        for (const name of Object.keys(failures)) {
          for (const [method, path] of [["GET", `/faults/dies/${name}`], ["POST", `/faults/fails/${name}`]] as const) {
            const res = yield* request(method, path)
            expect([name, method, res.status]).toEqual([name, method, 503])
            expect(res.headers.get("retry-after")).toBe(String(RETRY_AFTER_SECONDS))
            expect(res.headers.get("content-type")).toBe("application/json")
            expect(res.body.exception_message).toBe("Service Unavailable")
            expect(res.body.detail).toMatch(/^The database (is unavailable|could not complete the request in time)\. Try again shortly\.$/)
            // Nothing about the database (its address, the driver's words) reaches the client.
            expect(res.text).not.toMatch(/5432|ECONN|ENOENT|terminat|SqlError|_tag/)
          }
        }
      })
    )

    it.effect("a wrong statement or a bug stays a 500 (no Retry-After: trying again would not help)", () =>
      Effect.gen(function* () {
        for (const name of ["syntax", "missingColumn", "fileNotFound", "plain"]) {
          const res = yield* request("GET", `/faults/dies/${name}`)
          expect([name, res.status]).toEqual([name, 500])
          expect(res.body).toEqual({ exception_message: "Internal Server Error" })
          expect(res.headers.get("retry-after")).toBeNull()
        }
      })
    )

    it.effect("the API goes on answering normally afterwards", () =>
      Effect.gen(function* () {
        expect((yield* request("GET", "/ready")).status).toBe(200)
        expect((yield* request("POST", "/flows/", { body: { name: "after-faults" } })).status).toBe(201)
      })
    )
  })
})

describe("a background service while the database is unavailable", () => {
  it.scoped("logs each failed iteration as one warning line without a trace, and keeps its schedule", () =>
    Effect.gen(function* () {
      const iterations = yield* Ref.make(0)
      const lines = yield* Ref.make<ReadonlyArray<{ level: string; message: string }>>([])
      const logger = Logger.make(({ logLevel, message }) => {
        const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
        Effect.runSync(Ref.update(lines, (all) => [...all, { level: logLevel.label, message: text }]))
      })
      const service = defineService({
        name: "scheduler",
        interval: () => Duration.seconds(10),
        tick: Effect.gen(function* () {
          const n = yield* Ref.updateAndGet(iterations, (c) => c + 1)
          // Down for iterations 2 to 4, as a repository's statement fails (or dies) then; back after.
          if (n === 2) return yield* Effect.fail(failures.refused)
          if (n === 3) return yield* Effect.die(failures.acquireTimeout)
          if (n === 4) return yield* Effect.fail(failures.adminShutdown)
        })
      })
      const fiber = yield* Effect.fork(loop(service, Duration.seconds(10)).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger))))
      yield* TestClock.adjust(Duration.seconds(60))
      expect(yield* Ref.get(iterations)).toBe(7)
      expect(fiber.unsafePoll()).toBeNull()
      const logged = yield* Ref.get(lines)
      expect(logged).toHaveLength(3)
      for (const line of logged) {
        expect(line.level).toBe("WARN")
        expect(line.message).toMatch(/^Service scheduler: iteration failed, the database is unavailable: /)
        expect(line.message).not.toContain("\n")
      }
      expect(logged[0]!.message).toContain("ECONNREFUSED")
      yield* Fiber.interrupt(fiber)
    })
  )
})
