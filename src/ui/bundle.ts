/**
 * The UI bundle: a built web UI (an index.html and its assets) from `server.ui.static_directory`,
 * copied at start into a private temporary folder where the serve-base placeholder the build was
 * made with is replaced by `server.ui.serve_base`. The original folder is only read.
 *
 * Every file of the copy is listed once, at start, in a map from its path to what it is served
 * as; a request is answered from that map alone, so nothing outside the copy can be reached. A
 * symbolic link in the folder is copied as what it leads to only when that lies inside the folder.
 * Small files are held in memory, larger ones are streamed from the copy.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Data, Effect, Option } from "effect"
import { trimEnd } from "../domain/strings.ts"
import { normalizeBasePath } from "../http/paths.ts"
import { Settings, type SettingsValue } from "../settings/settings.ts"
import { cacheControlOf, contentTypeOf, isCompressible, isText } from "./files.ts"

/** What a UI build has in place of its base path until the server knows it. */
export const SERVE_BASE_PLACEHOLDER = "/PREFECT_UI_SERVE_BASE_REPLACE_PLACEHOLDER"

/** Files up to this size are held in memory; larger ones are read from the copy on each request. */
export const IN_MEMORY_LIMIT = 1024 * 1024

export interface UiFile {
  /** Path below the bundle root, "/"-separated, e.g. "assets/index-3f2a.js". */
  readonly path: string
  /** Where the file is in the copy. */
  readonly absolute: string
  readonly size: number
  readonly contentType: string
  readonly cacheControl: string
  /** A weak ETag from the content, the same for every replica serving the same build. */
  readonly etag: string
  readonly compressible: boolean
  /** The content, when the file is small enough to keep. */
  readonly body: Uint8Array | undefined
  /** The gzip-compressed content, made on first request and kept. */
  gzipped: Promise<Uint8Array> | undefined
}

export interface UiBundle {
  /** The serve base the UI answers under: "/" or "/ui" (no trailing slash). */
  readonly base: string
  /** The folder named by the settings. */
  readonly source: string
  /** The private copy the files are served from. */
  readonly directory: string
  readonly files: ReadonlyMap<string, UiFile>
  readonly index: UiFile
}

/** "ui/" → "/ui"; "" and "/" → "/" (the reference's normalisation of serve_base). */
export const normalizeServeBase = (serveBase: string): string => {
  const trimmed = serveBase.trim()
  if (trimmed === "" || trimmed === "/") return "/"
  const withSlash = trimmed.startsWith("/") ? trimmed : `/${trimmed}`
  return trimEnd(withSlash, "/") || "/"
}

/** What replaces the placeholder: the serve base without its trailing slash ("/" → ""). */
export const placeholderReplacement = (base: string): string => (base === "/" ? "" : base)

class NotServed extends Data.TaggedError("NotServed")<{ readonly reason: string }> {}

const attempt = <A>(reason: (error: unknown) => string, run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (error) => new NotServed({ reason: reason(error) }) })

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Every regular file below `root`, as "/"-separated relative paths. */
const walk = async (root: string): Promise<Array<string>> => {
  const out: Array<string> = []
  const visit = async (dir: string, prefix: string) => {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      const relative = prefix === "" ? entry.name : `${prefix}/${entry.name}`
      if (entry.isDirectory()) await visit(path.join(dir, entry.name), relative)
      else if (entry.isFile()) out.push(relative)
    }
  }
  await visit(root, "")
  return out.sort()
}

/**
 * The copy's filter: whether an entry of the folder whose real path is `root` is copied. Anything
 * but a symlink is; a symlink is copied as what it leads to only when that lies inside the folder
 * (and is not a folder holding the link, which would copy for ever). The others are left out, and
 * listed in `skipped`: a link to /etc/passwd in a UI folder must not serve it.
 */
const copiedEntry = (source: string, root: string, skipped: Array<string>) => async (entry: string): Promise<boolean> => {
  // The folder named by the settings may itself be a link: it is the root, not an escape.
  if (entry === source || !(await fs.lstat(entry)).isSymbolicLink()) return true
  const target = await fs.realpath(entry).catch(() => undefined)
  const within = (dir: string, base: string) => dir === base || dir.startsWith(base + path.sep)
  if (target !== undefined && within(target, root) && !within(await fs.realpath(path.dirname(entry)), target)) return true
  skipped.push(path.relative(source, entry))
  return false
}

const etagOf = (content: Uint8Array) =>
  `W/"${createHash("sha1").update(content).digest("base64url").slice(0, 22)}-${content.length.toString(16)}"`

/** Replaces the placeholder in the copy's text files and describes every file of the copy. */
const indexCopy = async (directory: string, replacement: string): Promise<Map<string, UiFile>> => {
  const files = new Map<string, UiFile>()
  for (const relative of await walk(directory)) {
    const absolute = path.join(directory, ...relative.split("/"))
    let content: Uint8Array = await fs.readFile(absolute)
    if (isText(relative)) {
      const text = Buffer.from(content).toString("utf8")
      if (text.includes(SERVE_BASE_PLACEHOLDER)) {
        content = Buffer.from(text.replaceAll(SERVE_BASE_PLACEHOLDER, replacement), "utf8")
        await fs.writeFile(absolute, content)
      }
    }
    files.set(relative, {
      path: relative,
      absolute,
      size: content.length,
      contentType: contentTypeOf(relative),
      cacheControl: cacheControlOf(relative),
      etag: etagOf(content),
      compressible: isCompressible(relative),
      body: content.length <= IN_MEMORY_LIMIT ? content : undefined,
      gzipped: undefined
    })
  }
  return files
}

const load = (settings: SettingsValue) =>
  Effect.gen(function* () {
    const ui = settings.server.ui
    if (!ui.enabled) return Option.none<UiBundle>()
    if (ui.static_directory === null || ui.static_directory.trim() === "") {
      yield* Effect.logInfo("No UI is served: server.ui.static_directory is not set.")
      return Option.none<UiBundle>()
    }
    const source = path.resolve(ui.static_directory)
    const base = normalizeServeBase(ui.serve_base)
    const apiBase = normalizeBasePath(settings.server.api.base_path)
    if (apiBase === "" || base === apiBase || base.startsWith(`${apiBase}/`)) {
      return yield* new NotServed({
        reason: `server.ui.serve_base (${base}) lies under the API base path (${apiBase || "/"}), where every path is the API's`
      })
    }
    const stat = yield* attempt(
      (error) =>
        (error as NodeJS.ErrnoException).code === "ENOENT"
          ? `server.ui.static_directory (${source}) does not exist`
          : `server.ui.static_directory (${source}) cannot be read: ${messageOf(error)}`,
      () => fs.stat(source)
    )
    if (!stat.isDirectory()) return yield* new NotServed({ reason: `server.ui.static_directory (${source}) is not a directory` })
    const entries = yield* attempt((error) => `server.ui.static_directory (${source}) cannot be read: ${messageOf(error)}`, () =>
      fs.readdir(source)
    )
    if (entries.length === 0) return yield* new NotServed({ reason: `server.ui.static_directory (${source}) is empty` })
    if (!entries.includes("index.html")) {
      return yield* new NotServed({ reason: `server.ui.static_directory (${source}) has no index.html; is it a built UI?` })
    }
    const directory = yield* Effect.acquireRelease(
      attempt((error) => `no temporary folder for the UI copy: ${messageOf(error)}`, () =>
        fs.mkdtemp(path.join(os.tmpdir(), "baton-ui-"))
      ),
      (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }).catch(() => undefined))
    )
    const skipped: Array<string> = []
    yield* attempt((error) => `copying ${source} to ${directory} failed: ${messageOf(error)}`, async () =>
      fs.cp(source, directory, { recursive: true, dereference: true, filter: copiedEntry(source, await fs.realpath(source), skipped) })
    )
    if (skipped.length > 0) {
      yield* Effect.logWarning(
        `The UI's symbolic links that lead outside ${source} (or to a folder holding them) are not served: ${skipped.sort().join(", ")}`
      )
    }
    const files = yield* attempt((error) => `preparing the UI copy in ${directory} failed: ${messageOf(error)}`, () =>
      indexCopy(directory, placeholderReplacement(base))
    )
    const index = files.get("index.html")!
    yield* Effect.logInfo(`Serving the UI from ${source} at ${base} (${files.size} files)`)
    return Option.some<UiBundle>({ base, source, directory, files, index })
  }).pipe(
    Effect.catchTag("NotServed", (error) =>
      Effect.as(
        Effect.logWarning(`The UI is not served: ${error.reason}. The API is served as usual.`),
        Option.none<UiBundle>()
      )
    )
  )

/**
 * The UI bundle the settings name, copied and indexed at start, or none (with one warning saying
 * why when a UI was asked for and cannot be served). The copy is removed when the server stops.
 */
export class UiStatic extends Effect.Service<UiStatic>()("baton/UiStatic", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const bundle = yield* load(settings)
    return { bundle } as const
  })
}) {}
