/**
 * Finding the web UIs of an installed `prefect` Python package, for when server.ui.static_directory
 * is unset. Every Prefect install carries two built UIs: <package>/server/ui (the default one) and
 * <package>/server/ui-v2. The package is looked for, first found wins:
 *
 * 1. server.ui.prefect_package_directory, when set (and nothing else then);
 * 2. unless server.ui.discover_prefect_package is off: the package python3 (then python) would import,
 *    asked of the interpreter itself, so an active virtualenv, PYTHONPATH or pyenv is honoured. The
 *    probe locates the package without importing it, inherits this process's environment and is
 *    bounded by a timeout; an interpreter that is missing, slow or failing is passed over quietly;
 * 3. the usual site-packages folders: a project's .venv or venv, the user's (pip --user), pipx and uv
 *    tool environments, pyenv, conda, Homebrew and the system's.
 *
 * A package found without any built UI (prefect-client installs one) is passed over with a note.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Context, Effect, Option } from "effect"
import type { SettingsValue } from "../settings/settings.ts"
import { compareVersions } from "../domain/strings.ts"

/** The two UIs, as /ui-settings names them: v1 the default UI, v2 the second one. */
export type UiVersion = "v1" | "v2"

/** Where a prefect package keeps each of its built UIs. */
export const PACKAGE_UIS: ReadonlyArray<readonly [UiVersion, ReadonlyArray<string>]> = [
  ["v1", ["server", "ui"]],
  ["v2", ["server", "ui-v2"]]
]

export interface PackageUi {
  readonly version: UiVersion
  /** The built UI: a folder with an index.html at its top. */
  readonly directory: string
}

export interface FoundPackage {
  /** The package folder (…/site-packages/prefect). */
  readonly directory: string
  /** How it was found, for the start line: "server.ui.prefect_package_directory", "found by python3" … */
  readonly how: string
  readonly uis: ReadonlyArray<PackageUi>
}

export interface Discovery {
  readonly found: Option.Option<FoundPackage>
  /** Packages passed over, and why: logged at info. */
  readonly notes: ReadonlyArray<string>
  /** A configured package folder that holds no UI: logged as a warning. */
  readonly problem: Option.Option<string>
}

export interface DiscoveryOptions {
  /** The interpreters asked, in order. */
  readonly pythons: ReadonlyArray<string>
  /** The probe's environment; undefined: this process's own, inherited. */
  readonly env: NodeJS.ProcessEnv | undefined
  readonly timeoutMs: number
  /** The folders the site-packages locations are relative to. */
  readonly home: string
  readonly cwd: string
}

/** How discovery looks; a test (or an embedding program) provides its own. */
export class UiDiscoveryOptions extends Context.Reference<UiDiscoveryOptions>()("baton/UiDiscoveryOptions", {
  defaultValue: (): DiscoveryOptions => ({
    pythons: ["python3", "python"],
    env: undefined,
    timeoutMs: 5000,
    home: os.homedir(),
    cwd: process.cwd()
  })
}) {}

/** Prints the package folder; find_spec locates it without running the package's code. */
const PROBE = [
  "import importlib.util",
  "try:",
  "    s = importlib.util.find_spec('prefect')",
  "    print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')",
  "except Exception:",
  "    print('')"
].join("\n")

/** The folder of the prefect package `python` would import, if it answers one in time. */
export const probePython = (python: string, options: DiscoveryOptions): Effect.Effect<Option.Option<string>> =>
  Effect.async<Option.Option<string>>((resume) => {
    const child = execFile(
      python,
      ["-c", PROBE],
      { env: options.env, timeout: options.timeoutMs, windowsHide: true, maxBuffer: 64 * 1024, encoding: "utf8" },
      (error, stdout) => {
        // A site customisation may print first: the answer is the last line.
        const answer = error === null ? stdout.trim().split(/\r?\n/).at(-1)?.trim() ?? "" : ""
        resume(Effect.succeed(answer !== "" && path.isAbsolute(answer) ? Option.some(answer) : Option.none()))
      }
    )
    // Spawning fails asynchronously (ENOENT goes to the callback); this only silences a stray error event.
    child.on("error", () => undefined)
    return Effect.sync(() => child.kill())
  })

const isFile = (file: string) => fs.stat(file).then((s) => s.isFile(), () => false)
const isDirectory = (dir: string) => fs.stat(dir).then((s) => s.isDirectory(), () => false)

/** The built UIs a package folder holds (those with an index.html). */
export const uisOf = (packageDirectory: string): Effect.Effect<ReadonlyArray<PackageUi>> =>
  Effect.promise(async () => {
    const uis: Array<PackageUi> = []
    for (const [version, segments] of PACKAGE_UIS) {
      const directory = path.join(packageDirectory, ...segments)
      if (await isFile(path.join(directory, "index.html"))) uis.push({ version, directory })
    }
    return uis
  })

/**
 * The site-packages locations looked in, as folder segments below a root; "*" matches within one
 * segment, newest version first. Project environments first, then the user's, then the system's.
 */
export const sitePackagesPatterns = (home: string, cwd: string): ReadonlyArray<ReadonlyArray<string>> => {
  const unix = (root: string, ...segments: Array<string>) => [root, ...segments, "lib", "python3*", "site-packages"]
  return [
    unix(cwd, ".venv"),
    unix(cwd, "venv"),
    [cwd, ".venv", "Lib", "site-packages"],
    [cwd, "venv", "Lib", "site-packages"],
    unix(home, ".local"),
    [home, "Library", "Python", "3*", "lib", "python", "site-packages"],
    unix(home, ".local", "share", "pipx", "venvs", "prefect"),
    unix(home, ".local", "pipx", "venvs", "prefect"),
    unix(home, ".local", "share", "uv", "tools", "prefect"),
    unix(home, ".pyenv", "versions", "*"),
    unix(home, "miniconda3"),
    unix(home, "anaconda3"),
    unix("/opt/conda"),
    unix("/opt/homebrew"),
    unix("/usr/local"),
    ["/usr/local/lib", "python3*", "dist-packages"],
    ["/usr/lib/python3/dist-packages"],
    unix("/usr")
  ]
}

const byVersionDescending = (a: string, b: string) => compareVersions(b, a)

/** The folders a pattern names that exist. */
const expand = async (pattern: ReadonlyArray<string>): Promise<Array<string>> => {
  let folders = [pattern[0]!]
  for (const segment of pattern.slice(1)) {
    if (!segment.includes("*")) {
      folders = folders.map((folder) => path.join(folder, segment))
      continue
    }
    const match = new RegExp(`^${segment.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replaceAll("*", "[^/\\\\]*")}$`)
    const next: Array<string> = []
    for (const folder of folders) {
      const names = await fs.readdir(folder).catch(() => [] as Array<string>)
      next.push(...names.filter((name) => match.test(name)).sort(byVersionDescending).map((name) => path.join(folder, name)))
    }
    folders = next
  }
  const existing: Array<string> = []
  for (const folder of folders) if (await isDirectory(folder)) existing.push(folder)
  return existing
}

/** Every site-packages folder the patterns name, in order, without repeats. */
export const sitePackagesFolders = (home: string, cwd: string): Effect.Effect<ReadonlyArray<string>> =>
  Effect.promise(async () => {
    const folders: Array<string> = []
    for (const pattern of sitePackagesPatterns(home, cwd)) {
      for (const folder of await expand(pattern)) if (!folders.includes(folder)) folders.push(folder)
    }
    return folders
  })

const withoutUi = (directory: string, how: string) =>
  `the prefect package at ${directory} (${how}) is without a built UI, as prefect-client installs it`

/** The prefect package whose UIs are served, as the settings and `options` find it. */
export const discoverPrefectPackage = (settings: SettingsValue, options: DiscoveryOptions): Effect.Effect<Discovery> =>
  Effect.gen(function* () {
    const ui = settings.server.ui
    const notes: Array<string> = []
    const result = (found: FoundPackage | undefined, problem?: string): Discovery => ({
      found: Option.fromNullable(found),
      notes,
      problem: Option.fromNullable(problem)
    })
    const configured = ui.prefect_package_directory?.trim() ?? ""
    if (configured !== "") {
      const directory = path.resolve(configured)
      const uis = yield* uisOf(directory)
      if (uis.length > 0) return result({ directory, how: "server.ui.prefect_package_directory", uis })
      return result(
        undefined,
        `server.ui.prefect_package_directory (${directory}) holds no built UI (server/ui or server/ui-v2 with an index.html)`
      )
    }
    if (!ui.discover_prefect_package) return result(undefined)
    // Asked side by side (an interpreter behind a version manager's shim takes a few hundred ms to
    // start); the first in order that knows a package with UIs wins.
    const answers = yield* Effect.forEach(options.pythons, (python) => probePython(python, options), { concurrency: "unbounded" })
    for (const [i, answered] of answers.entries()) {
      const python = options.pythons[i]!
      if (Option.isNone(answered)) continue
      const uis = yield* uisOf(answered.value)
      if (uis.length > 0) return result({ directory: answered.value, how: `found by ${python}`, uis })
      if (!notes.some((note) => note.includes(answered.value))) notes.push(withoutUi(answered.value, `found by ${python}`))
    }
    for (const folder of yield* sitePackagesFolders(options.home, options.cwd)) {
      const directory = path.join(folder, "prefect")
      if (!(yield* Effect.promise(() => isDirectory(directory)))) continue
      const uis = yield* uisOf(directory)
      if (uis.length > 0) return result({ directory, how: `found in ${folder}`, uis })
      if (!notes.some((note) => note.includes(directory))) notes.push(withoutUi(directory, `found in ${folder}`))
    }
    return result(undefined)
  })
