/**
 * The one mapping of "the database is unavailable" failures: which failures count (connection-class
 * errors, PostgreSQL's shutdown and connection SQLSTATEs, the pool's acquire timeout, a statement
 * cancelled by its timeout), the 503 with Retry-After a request answers with wherever such a failure
 * happens (a handler's defect or failure, a middleware's statement), and the background services
 * that log it in one line and go on. The database really going away is test/faults/database-away.test.ts.
 */
import { HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { SqlError } from "@effect/sql/SqlError"
import { describe, expect, it, layer } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Fiber, Layer, Logger, LogLevel, Ref, Schema, TestClock } from "effect"
import { unavailability, unavailabilityAsFailure } from "../../src/database/errors.ts"
import { Leadership } from "../../src/database/leadership.ts"
import { BatonApi } from "../../src/api.ts"
import { RETRY_AFTER_SECONDS } from "../../src/http/unavailable.ts"
import { GroupsLive } from "../../src/server.ts"
import { defineService, loop, runServices } from "../../src/services/runner.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { type LogLine, loggedServer } from "../support/logs.ts"
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
  deadlock: sqlError(driverError("deadlock detected", "40P01")),
  serialization: sqlError(driverError("could not serialize access due to concurrent update", "40001"))
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

  it("a statement cancelled by its timeout, a deadlock or a serialization failure: busy (a retry may succeed)", () => {
    expect(unavailability(failures.statementTimeout)).toBe("busy")
    expect(unavailability(failures.deadlock)).toBe("busy")
    expect(unavailability(failures.serialization)).toBe("busy")
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

/** What the three retryable failures requested below say in a log line. */
const RETRYABLE = {
  serialization: "could not serialize access due to concurrent update (40001)",
  deadlock: "deadlock detected (40P01)",
  terminated: "Connection terminated unexpectedly"
} as const

/** Requests failing with each retryable failure, each answered 503. */
const requestRetryables = Effect.gen(function* () {
  for (const name of Object.keys(RETRYABLE)) {
    expect([name, (yield* request("GET", `/faults/dies/${name}`)).status]).toEqual([name, 503])
  }
})

describe("server.log_retryable_errors", () => {
  const on: Array<LogLine> = []
  layer(loggedServer(on, { "server.log_retryable_errors": true }, LogLevel.Warning, { api: FaultedApi, handlers: FaultedHandlers }), {
    timeout: 60_000
  })((it) => {
    it.effect("on: each retryable failure of a request is logged as an error, with its reason and trace", () =>
      Effect.gen(function* () {
        on.length = 0
        yield* requestRetryables
        expect(on.map((line) => line.level)).toEqual(["ERROR", "ERROR", "ERROR"])
        Object.values(RETRYABLE).forEach((reason, i) => {
          expect(on[i]!.message).toMatch(/^Retryable database error while handling a request, answered 503: /)
          expect(on[i]!.message.split("\n")[0]).toContain(reason)
          expect(on[i]!.message).toMatch(/\n\s+at /)
        })
      }))
  })

  const off: Array<LogLine> = []
  layer(loggedServer(off, {}, LogLevel.Warning, { api: FaultedApi, handlers: FaultedHandlers }), { timeout: 60_000 })((it) => {
    it.effect("off (the default): not logged one by one: no error, no trace, one warning per 10 seconds at most", () =>
      Effect.gen(function* () {
        off.length = 0
        yield* requestRetryables
        expect(off.filter((line) => line.level !== "WARN")).toEqual([])
        expect(off.length).toBeLessThanOrEqual(1)
        for (const line of off) {
          expect(line.message).toMatch(/answering 503 \(\d+ request\(s\) since the last such message\)$/)
          expect(line.message).not.toContain("\n")
        }
      }))
  })

  it.scoped("a background service's iteration: an error with its trace when on, one warning line without when off", () =>
    Effect.gen(function* () {
      const logged = (setting: boolean) =>
        Effect.gen(function* () {
          const lines: Array<{ level: string; text: string }> = []
          const logger = Logger.make(({ cause, logLevel, message }) => {
            const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
            lines.push({ level: logLevel.label, text: Cause.isEmpty(cause) ? text : `${text} ${Cause.pretty(cause)}` })
          })
          const service = defineService({
            name: "late_runs",
            interval: () => Duration.seconds(10),
            tick: Effect.fail(failures.serialization)
          })
          // Run as the server runs its services: the runner reads the setting from the Settings it runs with.
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* Layer.build(runServices([service]).pipe(Layer.provide(Leadership.Default)))
              yield* TestClock.adjust(Duration.seconds(25))
            }).pipe(
              Effect.provide(settingsLayer({ "server.log_retryable_errors": setting })),
              Effect.provide(Logger.replace(Logger.defaultLogger, logger))
            )
          )
          return lines.filter((line) => line.level !== "DEBUG")
        })
      const whenOn = yield* logged(true)
      expect(whenOn.map((line) => line.level)).toEqual(["ERROR", "ERROR", "ERROR"])
      for (const line of whenOn) {
        expect(line.text).toMatch(/^Service late_runs: iteration failed, the database is unavailable: .*\(40001\)/)
        expect(line.text).toMatch(/\n\s+at /)
      }
      const whenOff = yield* logged(false)
      expect(whenOff.map((line) => line.level)).toEqual(["WARN", "WARN", "WARN"])
      for (const line of whenOff) {
        expect(line.text).toMatch(/^Service late_runs: iteration failed, the database is unavailable: .*\(40001\)$/)
      }
    }))
})
