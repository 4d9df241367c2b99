/**
 * Backup files: what kind a file is, told by its first bytes, and writing one so that a reader never
 * finds half of it. The two kinds are each database's own format, readable by its own tools: the
 * embedded database's is PGlite's dump of its data directory (a gzipped tar, `PGlite.loadDataDir`
 * takes it), PostgreSQL's is pg_dump's custom format (`pg_restore` takes it).
 */
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as zlib from "node:zlib"

export class BackupError extends Schema.TaggedError<BackupError>()("BackupError", {
  message: Schema.String
}) {}

export type BackupKind =
  /** PGlite's data directory; `postgres` is the PostgreSQL major version in its PG_VERSION, when read. */
  | { readonly _tag: "Embedded"; readonly postgres: string | undefined }
  /** An archive of pg_dump's custom format (`-Fc`). */
  | { readonly _tag: "PostgreSQL" }

/** Enough of a file to tell its kind. */
const HEAD_BYTES = 64 * 1024

const readHead = (file: string): Buffer => {
  const fd = fs.openSync(file, "r")
  try {
    const head = Buffer.alloc(HEAD_BYTES)
    return head.subarray(0, fs.readSync(fd, head, 0, HEAD_BYTES, 0))
  } finally {
    fs.closeSync(fd)
  }
}

/** The top-level entries of a PostgreSQL data directory. */
const DATA_DIR_ENTRY = /^(PG_VERSION|base|global|pg_[a-z_]+|postgresql(\.auto)?\.conf|postmaster\.[a-z]+)$/

/**
 * Whether `gzipped` begins a gzipped tar of a PostgreSQL data directory (its first entry is one of a
 * data directory's), and its PG_VERSION when that is in the part read (PGlite writes the entries in
 * no fixed order: a 16 MB segment of the write-ahead log may come first).
 */
const dataDir = (gzipped: Buffer): { readonly postgres: string | undefined } | undefined => {
  let tar: Buffer
  try {
    // Z_SYNC_FLUSH: what the head holds, without failing on the missing rest.
    tar = zlib.gunzipSync(gzipped, { finishFlush: zlib.constants.Z_SYNC_FLUSH })
  } catch {
    return undefined
  }
  let postgres: string | undefined
  for (let offset = 0, index = 0; offset + 512 <= tar.length; index++) {
    const field = (from: number, length: number) =>
      tar.subarray(offset + from, offset + from + length).toString("latin1").replace(/\0.*$/s, "")
    const name = field(0, 100).replace(/^\.?\//, "")
    if (name === "" || field(257, 5) !== "ustar") break
    if (index === 0 && !DATA_DIR_ENTRY.test(name.split("/")[0]!)) return undefined
    const size = Number.parseInt(field(124, 12).trim() || "0", 8)
    if (name === "PG_VERSION") {
      const version = tar.subarray(offset + 512, offset + 512 + size).toString("latin1").trim()
      if (/^\d+$/.test(version)) postgres = version
    }
    offset += 512 + Math.ceil(size / 512) * 512
  }
  return tar.subarray(257, 262).toString("latin1") === "ustar" ? { postgres } : undefined
}

const ioError = (file: string, verb: string) => (cause: unknown) => {
  const code = (cause as { code?: string }).code
  return new BackupError({
    message: code === "ENOENT"
      ? `${file} does not exist.`
      : code === "EISDIR"
      ? `${file} is a folder, not a backup file.`
      : `Cannot ${verb} ${file}: ${(cause as Error).message ?? String(cause)}`
  })
}

/** The kind of backup `file` is; fails, saying what it is instead, when it is neither. */
export const kindOf = (file: string) =>
  Effect.flatMap(Effect.try({ try: () => readHead(file), catch: ioError(file, "read") }), (head) => {
    if (head.subarray(0, 5).toString("latin1") === "PGDMP") return Effect.succeed<BackupKind>({ _tag: "PostgreSQL" })
    if (head[0] === 0x1f && head[1] === 0x8b) {
      const found = dataDir(head)
      if (found !== undefined) return Effect.succeed<BackupKind>({ _tag: "Embedded", postgres: found.postgres })
    }
    const text = head.subarray(0, 200).toString("utf8")
    return Effect.fail(
      new BackupError({
        message: /^--\s*\n-- PostgreSQL database dump/.test(text)
          ? `${file} is a plain SQL dump: restore it with psql. baton database restore takes pg_dump's custom format (pg_dump -Fc) or a backup of the embedded database.`
          : `${file} is not a Baton backup: it is neither a backup of the embedded database (made by baton database backup) nor a PostgreSQL archive of pg_dump's custom format.`
      })
    )
  })

/** Says that `file` is of the other kind than the database it was to be restored into. */
export const wrongKind = (file: string, kind: BackupKind) =>
  new BackupError({
    message: kind._tag === "Embedded"
      ? `${file} is a backup of the embedded database (PGlite's data directory${kind.postgres ? `, PostgreSQL ${kind.postgres}` : ""}); it restores only into the embedded database (with server.database.connection_url and host unset), not into PostgreSQL.`
      : `${file} is a backup of a PostgreSQL database (pg_dump's custom format); it restores only into PostgreSQL (server.database.connection_url set), not into the embedded database.`
  })

/** A place beside `file` to write the backup to before it takes `file`'s name. */
export const partialFile = (file: string) => path.join(path.dirname(file), `.${path.basename(file)}.partial-${process.pid}`)

/**
 * Makes the private, empty `partial` for `write` to fill, then gives it `file`'s name: a reader sees
 * the whole backup or none (the one before stays until then). A backup holds every secret the
 * database does, the key of the block documents' encryption included: it is readable by its owner
 * only. `partial` is removed when anything fails.
 */
export const writeAtomically = <E, R>(file: string, write: (partial: string) => Effect.Effect<void, E, R>) => {
  const partial = partialFile(file)
  return Effect.try({
    try: () => {
      // Left by a process of the same id that was killed: its mode is not known.
      fs.rmSync(partial, { force: true })
      fs.writeFileSync(partial, "", { mode: 0o600 })
    },
    catch: ioError(file, "write")
  }).pipe(
    Effect.zipRight(write(partial)),
    Effect.zipRight(Effect.try({ try: () => fs.renameSync(partial, file), catch: ioError(file, "write") })),
    Effect.zipRight(Effect.try({ try: () => fs.statSync(file).size, catch: ioError(file, "read") })),
    Effect.onError(() => Effect.sync(() => fs.rmSync(partial, { force: true })))
  )
}

/** A size for people: 4.4 MB. */
export const formatSize = (bytes: number) =>
  bytes < 1000 ? `${bytes} bytes` : bytes < 1e6 ? `${(bytes / 1e3).toFixed(1)} kB` : bytes < 1e9 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e9).toFixed(2)} GB`
