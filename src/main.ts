/**
 * The `baton` command line, and the only place where effects are run.
 */
import { Args, Command, Options, Prompt } from "@effect/cli"
import { HttpServer } from "@effect/platform"
import { defaultTeardown, type Teardown } from "@effect/platform/Runtime"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Context, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { apiServer, servicesServer } from "./server.ts"
import * as Backup from "./database/backup.ts"
import { checkWorkers, forkWorker, supervise } from "./cluster/primary.ts"
import * as ClusterWorker from "./cluster/worker.ts"
import * as Migrator from "./database/migrator.ts"
import * as Database from "./database/client.ts"
import { tuneV8ForEmbedded } from "./database/embedded-v8.ts"
import { layer as settingsLayer, Settings, settingsReport, type SettingsOverrides, usesDatabaseServer } from "./settings/settings.ts"
import { UiStatic, uiStartLines } from "./ui/bundle.ts"
import { BATON_VERSION } from "./version.ts"

const logLevels = {
  DEBUG: LogLevel.Debug,
  INFO: LogLevel.Info,
  WARNING: LogLevel.Warning,
  ERROR: LogLevel.Error,
  CRITICAL: LogLevel.Fatal
} as const

/**
 * A worker of `--workers N` runs until its primary asks it to stop, listened for from the start so
 * that a request that comes while the worker starts is not missed.
 */
const stopRequested = ClusterWorker.isWorker ? ClusterWorker.stopRequested() : undefined
const untilStopped = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  stopRequested === undefined ? effect : Effect.raceFirst(effect, Effect.promise(() => stopRequested))

/** Logging for the server process: logfmt lines at `server.logging_level`, naming the worker in a cluster. */
const withServerLogging = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Settings, (settings) => {
    const id = ClusterWorker.workerId()
    return effect.pipe(
      Logger.withMinimumLogLevel(logLevels[settings.server.logging_level]),
      id === undefined ? (e) => e : Effect.annotateLogs("worker", id)
    )
  })

const overridesFrom = (host: Option.Option<string>, port: Option.Option<number>, workers: Option.Option<number>): SettingsOverrides => ({
  ...Option.match(host, { onNone: () => ({}), onSome: (h) => ({ "server.api.host": h }) }),
  ...Option.match(port, { onNone: () => ({}), onSome: (p) => ({ "server.api.port": p }) }),
  ...Option.match(workers, { onNone: () => ({}), onSome: (w) => ({ "server.api.workers": w }) })
})

const host = Options.text("host").pipe(Options.withDescription("Address to listen on"), Options.optional)
const port = Options.integer("port").pipe(Options.withDescription("Port to listen on"), Options.optional)
const noServices = Options.boolean("no-services").pipe(
  Options.withDescription("Serve the API only; run the background services elsewhere")
)
const workers = Options.integer("workers").pipe(
  Options.withDescription("API processes sharing the port, the services led by one of them (PostgreSQL only)"),
  Options.optional
)

/**
 * Says that start-up is over, and which database the process uses: bin/baton.mjs tunes V8 for
 * start-up and undoes it on this event, for the embedded database otherwise than for a PostgreSQL
 * server (nothing listens when Baton is started another way).
 */
const startedUp = Effect.flatMap(Settings, (settings) =>
  Effect.sync(() => {
    const database = usesDatabaseServer(settings.server.database) ? "server" : "embedded"
    ;(process.emit as (event: string, detail: { readonly database: string }) => boolean)("baton:started", { database })
  })
)

/** A server process on the embedded database tunes V8 for it first (database/embedded-v8.ts). */
const tuneForDatabase = Effect.map(Settings, (settings) => {
  if (!usesDatabaseServer(settings.server.database)) tuneV8ForEmbedded()
})

/**
 * Builds `layer`, says where the API is, and runs until interrupted (SIGINT/SIGTERM), or, as a
 * worker, until the primary asks it to stop; a worker hands what it would print to the primary.
 */
const serve = (layer: Layer.Layer<HttpServer.HttpServer, unknown, never>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(layer)
      const settings = yield* Settings
      const served = Context.get(context, HttpServer.HttpServer).address
      const address = HttpServer.formatAddress(served)
      const lines = [`API at ${address}${settings.server.api.base_path}`]
      const ui = Context.getOption(context, UiStatic)
      if (Option.isSome(ui)) lines.push(...uiStartLines(settings, ui.value.bundles, address))
      const said = lines.map((line) => `Baton ${BATON_VERSION}: ${line}`)
      if (ClusterWorker.isWorker) yield* ClusterWorker.announce(served._tag === "TcpAddress" ? served.port : 0, said)
      else for (const line of said) yield* Console.log(line)
      yield* startedUp
      return yield* Effect.never
    })
  ).pipe(untilStopped)

const serverStart = Command.make("start", { host, port, noServices, workers }, ({ host, port, noServices, workers }) => {
  const overrides = overridesFrom(host, port, workers)
  return Effect.gen(function* () {
    const settings = yield* Settings
    // A worker runs the plain server, whatever number of workers its command line names.
    if (ClusterWorker.isWorker || settings.server.api.workers === 1) {
      yield* tuneForDatabase
      return yield* serve(apiServer({ overrides, services: !noServices }))
    }
    yield* checkWorkers(settings)
    // The primary's own start-up is over: it builds no server.
    yield* startedUp
    return yield* supervise({ workers: settings.server.api.workers, fork: forkWorker })
  }).pipe(
    withServerLogging,
    Effect.provide(settingsLayer(overrides))
  )
}).pipe(Command.withDescription("Start the API server (and, unless --no-services, the background services)"))

const servicesStart = Command.make("start", {}, () =>
  Effect.gen(function* () {
    yield* tuneForDatabase
    yield* Console.log(`Baton ${BATON_VERSION}: background services running`)
    return yield* Effect.scoped(Layer.build(servicesServer()).pipe(Effect.zipRight(startedUp), Effect.zipRight(Effect.never)))
  }).pipe(withServerLogging, Effect.provide(settingsLayer()))
).pipe(Command.withDescription("Run the background services only, without the HTTP API"))

const services = Command.make("services").pipe(
  Command.withDescription("Background services"),
  Command.withSubcommands([servicesStart])
)

const serverCommand = Command.make("server").pipe(
  Command.withDescription("Run the server"),
  Command.withSubcommands([serverStart, services])
)

const databaseUpgrade = Command.make("upgrade", {}, () =>
  Effect.gen(function* () {
    const applied = yield* Migrator.migrate
    yield* Console.log(applied.length === 0 ? "Database is up to date." : `Applied ${applied.length} migration(s).`)
  }).pipe(Effect.provide(Database.layerFromSettings), Effect.provide(settingsLayer()))
).pipe(Command.withDescription("Apply pending database migrations"))

const yes = Options.boolean("yes").pipe(Options.withAlias("y"), Options.withDescription("Do not ask for confirmation"))

const databaseReset = Command.make("reset", { yes }, ({ yes }) =>
  Effect.gen(function* () {
    const confirmed = yes || (yield* Prompt.confirm({ message: "Drop every Baton table and all its data?" }))
    if (!confirmed) return yield* Console.log("Nothing was changed.")
    yield* Migrator.reset
    yield* Console.log("Database reset.")
  }).pipe(Effect.provide(Database.layerFromSettings), Effect.provide(settingsLayer()))
).pipe(Command.withDescription("Drop every Baton table, then migrate again"))

const backupFile = Args.path({ name: "file" }).pipe(Args.withDescription("The backup file"))

const databaseBackup = Command.make("backup", { file: backupFile }, ({ file }) =>
  Backup.backup(file).pipe(Effect.flatMap(Console.log), Effect.provide(settingsLayer()))
).pipe(
  Command.withDescription(
    "Write the database to FILE: PostgreSQL through pg_dump (custom format) while servers run; the embedded database once its server is stopped"
  )
)

const force = Options.boolean("force").pipe(Options.withDescription("Replace the Baton data the database already holds"))

const databaseRestore = Command.make("restore", { file: backupFile, force }, ({ file, force }) =>
  Backup.restore(file, { force }).pipe(Effect.flatMap(Console.log), Effect.provide(settingsLayer()))
).pipe(Command.withDescription(
    "Restore FILE (made by `baton database backup`) into the database: over Baton data already there only with --force, and with no server running on it"
  ))

const database = Command.make("database").pipe(
  Command.withDescription("Manage the database"),
  Command.withSubcommands([databaseUpgrade, databaseReset, databaseBackup, databaseRestore])
)

const settingsCommand = Command.make("settings", {}, () =>
  Effect.gen(function* () {
    const settings = yield* Settings
    yield* Console.log(JSON.stringify(settingsReport(settings), null, 2))
  }).pipe(Effect.provide(settingsLayer()))
).pipe(Command.withDescription("Print the effective settings (secrets obfuscated)"))

const baton = Command.make("baton").pipe(
  Command.withDescription("Baton: a workflow orchestration server"),
  Command.withSubcommands([serverCommand, database, settingsCommand])
)

const cli = Command.run(baton, { name: "baton", version: BATON_VERSION })

/** Start-up problems the user can fix (bad settings, unreachable database) print one line, not a trace. */
const reportExpected = (cause: Cause.Cause<unknown>) => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value as { _tag?: string; message?: string }
    if (["SettingsError", "DatabaseError", "MigrationError", "BackupError", "ClusterError"].includes(error._tag ?? "")) {
      return Console.error(error.message).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))
    }
  }
  return Effect.failCause(cause)
}

/** As usual; but a worker exits once its server has closed, which its channel to the primary would prevent. */
const teardown: Teardown = (exit, onExit) =>
  defaultTeardown(exit, (code) => {
    onExit(code)
    if (!ClusterWorker.isWorker) return
    // Called without an argument, process.exit takes process.exitCode (set when a start-up problem
    // was reported); node 20 takes an explicit undefined for 0.
    if (code === 0) process.exit()
    else process.exit(code)
  })

cli(process.argv).pipe(
  Effect.catchAllCause(reportExpected),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ teardown })
)
