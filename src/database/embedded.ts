/**
 * The embedded database: PGlite (PostgreSQL compiled to WebAssembly) served on a private Unix socket
 * by pglite-socket, so Baton reaches it through the same PostgreSQL driver as a real server.
 */
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

export class EmbeddedDatabaseError extends Data.TaggedError("EmbeddedDatabaseError")<{
  readonly message: string
  readonly cause?: unknown
  /** The live process that holds the data directory, when that is why it could not be opened. */
  readonly heldBy?: number
}> {}

/** Thrown inside `lockDataDir`'s attempt when a live process holds the lock. */
class HeldBy extends Error {
  constructor(readonly pid: number, file: string) {
    super(
      `it is in use by process ${pid} (another Baton server on this home?); stop that first, or, if no Baton runs there, delete ${file}`
    )
  }
}

export interface EmbeddedOptions {
  /** Folder of the data files; omitted for an in-memory database. */
  readonly dataDir?: string
  /** A dump (from `dumpDataDir`) to start from. */
  readonly loadDataDir?: Blob
  /** Folder for the socket; PostgreSQL clients look for `.s.PGSQL.5432` in it. */
  readonly socketDir: string
  /** PostgreSQL's shared_buffers (its page cache); `SHARED_BUFFERS` unless given. */
  readonly sharedBuffers?: string
}

export interface EmbeddedDatabase {
  readonly db: PGlite
  /** Pass as `host` to a PostgreSQL client. */
  readonly socketDir: string
}

/** The socket file name PostgreSQL clients derive from a host directory and port 5432. */
export const SOCKET_FILE = ".s.PGSQL.5432"

/**
 * The embedded database's page cache. PGlite allocates its shared memory from WebAssembly memory
 * and zero-fills it at start, so all of it is resident from the first moment: PostgreSQL's usual
 * 128MB (what initdb writes into postgresql.conf) made up a third of the server's memory and a
 * quarter of a second of its start-up; 8MB instead of 16MB is another 8MB less, at the same rate of
 * runs (docs/performance.md, "Memory and start-up"). The data files stay in the operating system's
 * file cache behind it, a system call away.
 */
export const SHARED_BUFFERS = "8MB"

/**
 * PostgreSQL sizes its lock tables, process slots and their hash tables in shared memory for this
 * many connections, and PGlite zero-fills all of it at start. PGlite runs one backend, whatever the
 * number of clients on its socket, so the default 100 paid for 99 that never come: 10 takes the
 * shared memory from 15 to 12MB.
 */
export const MAX_CONNECTIONS = 10

/** Whether process `pid` exists (EPERM: it does, as another user's). */
const processExists = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: string }).code === "EPERM"
  }
}

/**
 * Makes `{dataDir}.lock` hold this process's id for the scope. PGlite takes no lock of its own: two
 * processes opening one data directory would both write it and corrupt it. A lock whose process is
 * gone (a server killed with SIGKILL) is taken over; one whose process runs is refused.
 */
export const lockDataDir = (dataDir: string) => {
  const file = `${dataDir}.lock`
  return Effect.acquireRelease(
    Effect.try({
      try: () => {
        for (let attempt = 0; attempt < 3; attempt++) {
          try {
            fs.writeFileSync(file, `${process.pid}\n`, { flag: "wx", mode: 0o600 })
            return file
          } catch (error) {
            if ((error as { code?: string }).code !== "EEXIST") throw error
          }
          const holder = Number.parseInt(fs.readFileSync(file, "utf8").trim(), 10)
          if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processExists(holder)) {
            throw new HeldBy(holder, file)
          }
          // Left by a process that is gone.
          fs.rmSync(file, { force: true })
        }
        throw new Error(`cannot take ${file}`)
      },
      catch: (cause) =>
        new EmbeddedDatabaseError({
          message: `Cannot open the embedded database in ${dataDir}: ${(cause as Error).message}`,
          cause,
          ...(cause instanceof HeldBy ? { heldBy: cause.pid } : {})
        })
    }),
    (file) =>
      Effect.sync(() => {
        try {
          if (fs.readFileSync(file, "utf8").trim() === String(process.pid)) fs.rmSync(file, { force: true })
        } catch {
          // Already gone.
        }
      })
  )
}

/**
 * PGlite on `dataDir` (in memory without one), closed with the scope. Takes no lock: the caller holds
 * `lockDataDir` for a data directory on disk.
 */
export const openPGlite = (options: Pick<EmbeddedOptions, "dataDir" | "loadDataDir" | "sharedBuffers">) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () =>
        PGlite.create({
          ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
          ...(options.loadDataDir !== undefined ? { loadDataDir: options.loadDataDir } : {}),
          startParams: [
            ...PGlite.defaultStartParams,
            "-c",
            `shared_buffers=${options.sharedBuffers ?? SHARED_BUFFERS}`,
            "-c",
            `max_connections=${MAX_CONNECTIONS}`
          ]
        }),
      catch: (cause) =>
        new EmbeddedDatabaseError({
          message: `Cannot open the embedded database${options.dataDir ? ` in ${options.dataDir}` : ""}: ${String(cause)}`,
          cause
        })
    }),
    (db) => Effect.promise(() => db.close()).pipe(Effect.orDie, Effect.ignoreLogged)
  )

/**
 * Opens PGlite and serves it on `{socketDir}/.s.PGSQL.5432`; closing the scope stops the socket and
 * closes PGlite cleanly (an unclosed PGlite keeps the process alive and leaves the data directory
 * to be recovered on the next start). A data directory on disk is locked for the scope.
 */
export const serveEmbedded = (options: EmbeddedOptions) =>
  Effect.gen(function* () {
    if (options.dataDir !== undefined) yield* lockDataDir(options.dataDir)
    const db = yield* openPGlite(options)
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(options.socketDir, { recursive: true, mode: 0o700 })
        // A socket left by a process that did not stop cleanly would make listen() fail.
        fs.rmSync(path.join(options.socketDir, SOCKET_FILE), { force: true })
      },
      catch: (cause) => new EmbeddedDatabaseError({ message: `Cannot prepare ${options.socketDir}: ${String(cause)}`, cause })
    })
    // Messages of different connections may interleave on PGlite's single session outside an
    // explicit transaction, so the client pool uses one connection; a second one is allowed so a
    // recycled connection can overlap its successor.
    const server = new PGLiteSocketServer({ db, path: path.join(options.socketDir, SOCKET_FILE), maxConnections: 2 })
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => server.start(),
        catch: (cause) => new EmbeddedDatabaseError({ message: `Cannot serve the embedded database: ${String(cause)}`, cause })
      }),
      () => Effect.promise(() => server.stop())
    )
    return { db, socketDir: options.socketDir } satisfies EmbeddedDatabase
  })

/** Ensures `dir` exists and is private to this user. */
export const ensureDir = (dir: string) =>
  Effect.try({
    try: () => fs.mkdirSync(dir, { recursive: true, mode: 0o700 }),
    catch: (cause) => new EmbeddedDatabaseError({ message: `Cannot create ${dir}: ${String(cause)}`, cause })
  })
