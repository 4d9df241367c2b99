/**
 * Finding an installed prefect package's UIs: asking python3 (with the environment it is given),
 * the site-packages folders, and the order the settings and the two ways are tried in.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, List, Logger, Option } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { layer as settingsLayer, Settings, type SettingsOverrides } from "../../src/settings/settings.ts"
import { UiStatic, uiStartLines } from "../../src/ui/bundle.ts"
import {
  discoverPrefectPackage,
  type DiscoveryOptions,
  probePython,
  sitePackagesFolders,
  UiDiscoveryOptions
} from "../../src/ui/discovery.ts"
import { makeFakePrefect, makeFixture, removeFixture } from "./fixture.ts"

const hasPython3 = spawnSync("python3", ["--version"]).status === 0

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "baton-ui-discovery-"))
const folder = (...segments: Array<string>) => {
  const dir = path.join(scratch, ...segments)
  fs.mkdirSync(dir, { recursive: true })
  return dir
}
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

/** On PYTHONPATH: found by python3. */
const onPythonPath = makeFakePrefect({ v1: true, v2: true }, folder("pythonpath"))
/** In a project's .venv below the working directory: found by the scan. */
const cwd = folder("project")
const venvSitePackages = folder("project", ".venv", "lib", "python3.12", "site-packages")
const inVenv = makeFakePrefect({ v1: true, v2: false }, venvSitePackages)
/** Named by the setting. */
const named = makeFakePrefect({ v1: false, v2: true }, folder("named"))
/** A prefect package without UIs, as prefect-client installs it. */
const clientOnly = folder("client-only", "prefect")
fs.writeFileSync(path.join(clientOnly, "__init__.py"), "")
const explicit = makeFixture()
afterAll(() => removeFixture(explicit))

const home = folder("home")
const options: DiscoveryOptions = {
  pythons: ["python3"],
  env: { ...process.env, PYTHONPATH: onPythonPath.root },
  timeoutMs: 10_000,
  home,
  cwd
}
const noPython: DiscoveryOptions = { ...options, pythons: [path.join(scratch, "no-such-python")] }

/** An executable that stands in for python: a shell script. */
const fakePython = (name: string, script: string) => {
  const file = path.join(folder("bin"), name)
  fs.writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 })
  return file
}

const settingsOf = (overrides: SettingsOverrides) => Effect.provide(Settings, settingsLayer(overrides))

const discover = (overrides: SettingsOverrides, with_: DiscoveryOptions = options) =>
  Effect.flatMap(settingsOf({ "server.ui.discover_prefect_package": true, ...overrides }), (settings) =>
    discoverPrefectPackage(settings, with_)
  )

describe("finding an installed prefect package", () => {
  it.effect.skipIf(!hasPython3)("asks python3, with the environment it is given, where the package is", () =>
    Effect.gen(function* () {
      expect(yield* probePython("python3", options)).toEqual(Option.some(onPythonPath.packageDirectory))
      const found = yield* discover({})
      expect(Option.map(found.found, (f) => [f.directory, f.how, f.uis.map((ui) => ui.version)])).toEqual(
        Option.some([onPythonPath.packageDirectory, "found by python3", ["v1", "v2"]])
      )
    })
  )

  it.effect("passes over an interpreter that is missing, fails, answers nonsense or takes too long", () =>
    Effect.gen(function* () {
      expect(yield* probePython(path.join(scratch, "no-such-python"), options)).toEqual(Option.none())
      expect(yield* probePython(fakePython("failing", "exit 3"), options)).toEqual(Option.none())
      expect(yield* probePython(fakePython("relative", "echo prefect"), options)).toEqual(Option.none())
      // A site customisation printing first: the last line is the answer.
      const chatty = fakePython("chatty", `echo hello; echo ${named.packageDirectory}`)
      expect(yield* probePython(chatty, options)).toEqual(Option.some(named.packageDirectory))
      const slow = fakePython("slow", "exec sleep 30")
      const started = Date.now()
      expect(yield* probePython(slow, { ...options, timeoutMs: 300 })).toEqual(Option.none())
      expect(Date.now() - started).toBeLessThan(5000)
    })
  )

  it.effect("lists the site-packages folders: the project's environment first, newest Python first", () =>
    Effect.gen(function* () {
      const older = folder("project", ".venv", "lib", "python3.9", "site-packages")
      const pipx = folder("home", ".local", "share", "pipx", "venvs", "prefect", "lib", "python3.11", "site-packages")
      const user = folder("home", ".local", "lib", "python3.10", "site-packages")
      folder("home", ".local", "lib", "python2.7", "site-packages")
      const folders = yield* sitePackagesFolders(home, cwd)
      expect(folders.slice(0, 4)).toEqual([venvSitePackages, older, user, pipx])
      expect(folders.filter((f) => f.startsWith(scratch))).toEqual([venvSitePackages, older, user, pipx])
    })
  )

  it.effect("looks in the site-packages folders when no interpreter knows the package", () =>
    Effect.gen(function* () {
      const found = yield* discover({}, noPython)
      expect(Option.map(found.found, (f) => [f.directory, f.how])).toEqual(
        Option.some([inVenv.packageDirectory, `found in ${venvSitePackages}`])
      )
    })
  )

  it.effect("passes over a package without UIs, with a note, and looks further", () =>
    Effect.gen(function* () {
      const client = fakePython("client", `echo ${clientOnly}`)
      const found = yield* discover({}, { ...options, pythons: [client] })
      expect(Option.map(found.found, (f) => f.directory)).toEqual(Option.some(inVenv.packageDirectory))
      expect(found.notes).toEqual([expect.stringContaining(clientOnly)])
      expect(found.notes[0]).toContain("without a built UI")
    })
  )

  it.effect("takes server.ui.prefect_package_directory before asking anything, and only it", () =>
    Effect.gen(function* () {
      const found = yield* discover({ "server.ui.prefect_package_directory": named.packageDirectory })
      expect(Option.map(found.found, (f) => [f.directory, f.how, f.uis.map((ui) => ui.version)])).toEqual(
        Option.some([named.packageDirectory, "server.ui.prefect_package_directory", ["v2"]])
      )
      // A named folder without UIs is a problem to report, not a reason to look elsewhere.
      const empty = yield* discover({ "server.ui.prefect_package_directory": clientOnly })
      expect(Option.isNone(empty.found)).toBe(true)
      expect(Option.getOrThrow(empty.problem)).toContain(clientOnly)
    })
  )

  it.effect("looks nowhere when server.ui.discover_prefect_package is off", () =>
    Effect.gen(function* () {
      const found = yield* discover({ "server.ui.discover_prefect_package": false })
      expect(found).toEqual({ found: Option.none(), notes: [], problem: Option.none() })
    })
  )
})

/** The bundles UiStatic serves for `overrides`, looking with `with_`, and the log lines at info and above. */
const served = (overrides: SettingsOverrides, with_: DiscoveryOptions = options) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      lines.push(`${logLevel.label} ${String(List.isList(message) ? List.toArray(message)[0] : Array.isArray(message) ? message[0] : message)}`)
    })
    const settings = yield* settingsOf(overrides)
    const { bundles } = yield* Effect.scoped(
      Effect.flatMap(UiStatic, Effect.succeed).pipe(
        Effect.provide(UiStatic.Default.pipe(Layer.provide(settingsLayer(overrides)))),
        Effect.provide(Layer.succeed(UiDiscoveryOptions, with_)),
        Effect.provide(Logger.replace(Logger.defaultLogger, capture))
      )
    )
    return { bundles, lines, settings }
  })

describe("which UI is served, in order: static_directory, prefect_package_directory, python3, site-packages", () => {
  const everything = {
    "server.ui.static_directory": explicit.dir,
    "server.ui.prefect_package_directory": named.packageDirectory,
    "server.ui.discover_prefect_package": true
  }

  it.effect.skipIf(!hasPython3)("takes each in turn when the ones before it are unset", () =>
    Effect.gen(function* () {
      const steps: Array<[SettingsOverrides, DiscoveryOptions, string, string]> = [
        [everything, options, explicit.dir, "server.ui.static_directory"],
        [{ ...everything, "server.ui.static_directory": null }, options, path.join(named.packageDirectory, "server", "ui-v2"), "server.ui.prefect_package_directory"],
        [{ "server.ui.discover_prefect_package": true }, options, path.join(onPythonPath.packageDirectory, "server", "ui"), "found by python3"],
        [{ "server.ui.discover_prefect_package": true }, noPython, path.join(inVenv.packageDirectory, "server", "ui"), `found in ${venvSitePackages}`]
      ]
      for (const [overrides, with_, source, origin] of steps) {
        const { bundles } = yield* served(overrides, with_)
        expect([bundles[0]?.source, bundles[0]?.origin], origin).toEqual([source, origin])
      }
    })
  )

  it.effect.skipIf(!hasPython3)("says at start which UIs it serves, at which address, from where and how they were found", () =>
    Effect.gen(function* () {
      const { bundles, lines, settings } = yield* served({ "server.ui.discover_prefect_package": true })
      expect(uiStartLines(settings, bundles, "http://127.0.0.1:4200")).toEqual([
        `UI at http://127.0.0.1:4200/ from ${path.join(onPythonPath.packageDirectory, "server", "ui")} (found by python3)`,
        `UI (v2) at http://127.0.0.1:4200/v2/ from ${path.join(onPythonPath.packageDirectory, "server", "ui-v2")} (found by python3)`
      ])
      expect(lines.filter((line) => line.startsWith("INFO Serving the UI"))).toHaveLength(2)
    })
  )

  it.effect("says how to get a UI when none is found, and nothing when the UI is disabled", () =>
    Effect.gen(function* () {
      const none = yield* served({ "server.ui.discover_prefect_package": false })
      expect(none.bundles).toEqual([])
      expect(uiStartLines(none.settings, none.bundles, "http://127.0.0.1:4200")).toEqual([
        "No UI found. To get one: pip install prefect (Baton serves the UIs it ships with), or set server.ui.static_directory to a built UI (docs/ui.md)."
      ])
      expect(none.lines.filter((line) => !line.startsWith("DEBUG"))).toEqual([expect.stringMatching(/^INFO No UI is served: pip install prefect/)])
      const disabled = yield* served({ ...everything, "server.ui.enabled": false })
      expect(disabled.bundles).toEqual([])
      expect(uiStartLines(disabled.settings, disabled.bundles, "http://127.0.0.1:4200")).toEqual([])
      // A named package folder without UIs: one warning, and nothing looked for elsewhere.
      const problem = yield* served({ "server.ui.prefect_package_directory": clientOnly, "server.ui.discover_prefect_package": true })
      expect(problem.bundles).toEqual([])
      expect(problem.lines.filter((line) => line.startsWith("WARN"))).toEqual([expect.stringContaining(clientOnly)])
    })
  )
})
