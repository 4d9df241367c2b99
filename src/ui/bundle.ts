/**
 * The UI bundles: built web UIs (an index.html and its assets), from `server.ui.static_directory` or
 * from an installed prefect package (./discovery.ts), each copied at start into a private temporary
 * folder where the serve-base placeholder the build was made with is replaced by the path it is
 * served under. The original folders are only read.
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
import { discoverPrefectPackage, type DiscoveryOptions, UiDiscoveryOptions, type UiVersion } from "./discovery.ts"
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
  /** The folder it was copied from. */
  readonly source: string
  /** The private copy the files are served from. */
  readonly directory: string
  readonly files: ReadonlyMap<string, UiFile>
  readonly index: UiFile
  /** Which UI it is, as /ui-settings names it. */
  readonly version: UiVersion
  /** How it was chosen: "server.ui.static_directory", "found by python3" … */
  readonly origin: string
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

/** One build to serve: where it is, where it is served, and how it was chosen (for messages). */
interface BuildToServe {
  readonly source: string
  readonly base: string
  readonly version: UiVersion
  /** What names the folder in a warning: "server.ui.static_directory", "the prefect package's UI". */
  readonly label: string
  readonly origin: string
}

/** Copies and indexes one build, or says (once, as a warning) why it is not served. */
const loadBuild = (build: BuildToServe, apiBase: string) =>
  Effect.gen(function* () {
    const { base, label } = build
    const source = path.resolve(build.source)
    if (apiBase === "" || base === apiBase || base.startsWith(`${apiBase}/`)) {
      return yield* new NotServed({
        reason: `${label} (${source}) would be served at ${base}, under the API base path (${apiBase || "/"}), where every path is the API's; set server.ui.serve_base elsewhere`
      })
    }
    const stat = yield* attempt(
      (error) =>
        (error as NodeJS.ErrnoException).code === "ENOENT"
          ? `${label} (${source}) does not exist`
          : `${label} (${source}) cannot be read: ${messageOf(error)}`,
      () => fs.stat(source)
    )
    if (!stat.isDirectory()) return yield* new NotServed({ reason: `${label} (${source}) is not a directory` })
    const entries = yield* attempt((error) => `${label} (${source}) cannot be read: ${messageOf(error)}`, () =>
      fs.readdir(source)
    )
    if (entries.length === 0) return yield* new NotServed({ reason: `${label} (${source}) is empty` })
    if (!entries.includes("index.html")) {
      return yield* new NotServed({ reason: `${label} (${source}) has no index.html; is it a built UI?` })
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
    yield* Effect.logInfo(`Serving the UI from ${source} at ${base} (${files.size} files; ${build.origin})`)
    return Option.some<UiBundle>({ base, source, directory, files, index, version: build.version, origin: build.origin })
  }).pipe(
    Effect.catchTag("NotServed", (error) =>
      Effect.as(
        Effect.logWarning(`The UI is not served: ${error.reason}. The API is served as usual.`),
        Option.none<UiBundle>()
      )
    )
  )

/** "/" + "v2" → "/v2"; "/ui" + "v2" → "/ui/v2". */
const below = (base: string, segment: string) => (base === "/" ? `/${segment}` : `${base}/${segment}`)

/**
 * The builds the settings choose: the one in server.ui.static_directory, else the UIs of a prefect
 * package (./discovery.ts): its default UI at the serve base and its second one at <base>/v2, or at
 * the serve base when it is the only one.
 */
const buildsToServe = (settings: SettingsValue, options: DiscoveryOptions) =>
  Effect.gen(function* () {
    const ui = settings.server.ui
    const base = normalizeServeBase(ui.serve_base)
    if (ui.static_directory !== null && ui.static_directory.trim() !== "") {
      const version: UiVersion = ui.v2_enabled ? "v2" : "v1"
      const label = "server.ui.static_directory"
      return [{ source: ui.static_directory, base, version, label, origin: label }]
    }
    const discovery = yield* discoverPrefectPackage(settings, options)
    for (const note of discovery.notes) yield* Effect.logInfo(`Passed over: ${note}.`)
    if (Option.isSome(discovery.problem)) {
      yield* Effect.logWarning(`The UI is not served: ${discovery.problem.value}. The API is served as usual.`)
    }
    if (Option.isNone(discovery.found)) {
      yield* Effect.logInfo(`No UI is served: ${NO_UI_HINT}`)
      return []
    }
    const found = discovery.found.value
    const both = found.uis.length > 1
    return found.uis.map((packageUi): BuildToServe => ({
      source: packageUi.directory,
      base: both && packageUi.version === "v2" ? below(base, "v2") : base,
      version: packageUi.version,
      label: "the prefect package's UI",
      origin: found.how
    }))
  })

/** How to get a UI, said when none is served. */
export const NO_UI_HINT =
  "pip install prefect (Baton serves the UIs it ships with), or set server.ui.static_directory to a built UI (docs/ui.md)"

const load = (settings: SettingsValue) =>
  Effect.gen(function* () {
    if (!settings.server.ui.enabled) return []
    const builds = yield* buildsToServe(settings, yield* UiDiscoveryOptions)
    const apiBase = normalizeBasePath(settings.server.api.base_path)
    const loaded = yield* Effect.forEach(builds, (build) => loadBuild(build, apiBase), { concurrency: "unbounded" })
    return loaded.flatMap((bundle) => Option.toArray(bundle))
  })

/** What `baton server start` prints about the UI, below the API's address (`root`, without a trailing slash). */
export const uiStartLines = (settings: SettingsValue, bundles: ReadonlyArray<UiBundle>, root: string): ReadonlyArray<string> => {
  if (!settings.server.ui.enabled) return []
  if (bundles.length === 0) return [`No UI found. To get one: ${NO_UI_HINT}.`]
  const named = { v1: "UI", v2: bundles.length > 1 ? "UI (v2)" : "UI" }
  return bundles.map((bundle) =>
    `${named[bundle.version]} at ${root}${bundle.base === "/" ? "/" : `${bundle.base}/`} from ${bundle.source} (${bundle.origin})`
  )
}

/**
 * The UI bundles the settings choose, copied and indexed at start: the default UI first. None when
 * no UI is found or enabled (with one warning saying why when a UI was asked for and cannot be
 * served). The copies are removed when the server stops.
 */
export class UiStatic extends Effect.Service<UiStatic>()("baton/UiStatic", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const bundles: ReadonlyArray<UiBundle> = yield* load(settings)
    return { bundles } as const
  })
}) {}
