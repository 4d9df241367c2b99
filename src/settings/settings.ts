/**
 * The Settings service: the decoded settings tree, loaded once from the environment through
 * Effect Config. Nothing else in Baton reads environment variables.
 */
import { Config, Context, Effect, Either, Layer, Option, Schema } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import { isSetting, type Setting, type SettingsOf, type Tree } from "./define.ts"
import { tree } from "./tree.ts"

export type SettingsValue = SettingsOf<typeof tree>

export class Settings extends Context.Tag("baton/Settings")<Settings, SettingsValue>() {}

export const ENV_PREFIX = "BATON_"

export interface Leaf {
  readonly path: ReadonlyArray<string>
  readonly key: string
  readonly env: string
  readonly setting: Setting<unknown>
}

const collect = (node: Tree, prefix: ReadonlyArray<string>, out: Array<Leaf>): Array<Leaf> => {
  for (const [key, child] of Object.entries(node)) {
    const at = [...prefix, key]
    if (isSetting(child)) {
      out.push({ path: at, key: at.join("."), env: envName(at), setting: child })
    } else {
      collect(child, at, out)
    }
  }
  return out
}

export const envName = (at: ReadonlyArray<string>): string => ENV_PREFIX + at.join("_").toUpperCase()

/** Every setting in tree order, with its dotted key and environment variable. */
export const leaves: ReadonlyArray<Leaf> = collect(tree, [], [])

export interface SettingProblem {
  readonly variable: string
  readonly value: string
  readonly expected: string
}

export class SettingsError extends Schema.TaggedError<SettingsError>()("SettingsError", {
  problems: Schema.Array(Schema.Struct({ variable: Schema.String, value: Schema.String, expected: Schema.String }))
}) {
  override get message(): string {
    return this.problems
      .map((p) => `Invalid setting ${p.variable}=${JSON.stringify(p.value)}: expected ${p.expected}`)
      .join("\n")
  }
}

const setIn = (target: Record<string, any>, at: ReadonlyArray<string>, value: unknown) => {
  let node = target
  for (const key of at.slice(0, -1)) node = node[key] ??= {}
  node[at[at.length - 1]!] = value
}

const expandHome = (p: string) => (p === "~" || p.startsWith("~/") ? path.join(os.homedir(), p.slice(1)) : p)

/**
 * Overrides given by a program that embeds Baton: dotted keys ("server.api.port") to values in
 * their environment-string or JSON form. They win over the environment.
 */
export type SettingsOverrides = Readonly<Record<string, unknown>>

export const loadSettings = (overrides: SettingsOverrides = {}): Effect.Effect<SettingsValue, SettingsError> =>
  Effect.gen(function* () {
    const unknownKeys = Object.keys(overrides).filter((key) => !leaves.some((leaf) => leaf.key === key))
    const problems: Array<SettingProblem> = unknownKeys.map((key) => ({
      variable: key,
      value: String(overrides[key]),
      expected: "a known setting key"
    }))
    const result: Record<string, any> = {}
    for (const leaf of leaves) {
      const raw = Object.hasOwn(overrides, leaf.key)
        ? Option.some(overrides[leaf.key])
        : yield* Config.option(Config.string(leaf.env)).pipe(Effect.orElseSucceed(() => Option.none<string>()))
      if (Option.isNone(raw)) {
        setIn(result, leaf.path, leaf.setting.default())
        continue
      }
      const input = typeof raw.value === "string" ? leaf.setting.fromEnv(raw.value) : raw.value
      const decoded = Schema.decodeUnknownEither(leaf.setting.schema)(input)
      if (Either.isLeft(decoded)) {
        problems.push({
          variable: Object.hasOwn(overrides, leaf.key) ? leaf.key : leaf.env,
          // A secret's value never shows in a message, even a wrong one.
          value: leaf.setting.secret ? OBFUSCATED : typeof raw.value === "string" ? raw.value : JSON.stringify(raw.value),
          expected: leaf.setting.expected
        })
        continue
      }
      setIn(result, leaf.path, decoded.right)
    }
    if (problems.length > 0) return yield* new SettingsError({ problems })
    result.home = expandHome(result.home)
    return derive(result) as SettingsValue
  })

/** Whether the database is a PostgreSQL server rather than the embedded one. */
export const usesDatabaseServer = (db: SettingsValue["server"]["database"]) => db.connection_url !== null || db.host !== null

/**
 * Defaults derived from other settings: paths under home (as the reference derives them), the
 * lease storage, which replicas on one PostgreSQL must share, and the event cache and ordering,
 * which follow the broker.
 */
const derive = (settings: Record<string, any>): Record<string, any> => {
  settings.server.concurrency.lease_storage ??= usesDatabaseServer(settings.server.database) ? "database" : "memory"
  // The cache and the ordering are shared when the broker is.
  settings.server.events.messaging_cache ??= settings.server.events.messaging_broker
  settings.server.events.causal_ordering ??= settings.server.events.messaging_broker
  const home: string = settings.home
  for (const [at, fallback] of derivedPaths) {
    let node = settings
    for (const key of at.slice(0, -1)) node = node?.[key]
    const last = at[at.length - 1]!
    if (node !== undefined && node[last] === null) node[last] = path.join(home, fallback)
    else if (node !== undefined && typeof node[last] === "string") node[last] = expandHome(node[last])
  }
  return settings
}

/** Paths that default to a file or folder under home: [path in the tree, name under home]. */
export const derivedPaths: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
  [["profiles_path"], "profiles.toml"],
  [["server", "memo_store_path"], "memo_store.toml"],
  [["logging", "config_path"], "logging.yml"],
  [["results", "local_storage_path"], "storage"]
]

const OBFUSCATED = "********"

/**
 * `value` with the password of a URL in it obfuscated ("redis://:pw@host" → "redis://:********@host"):
 * a setting that is no secret as a whole (a Redis URL, an API URL) may still carry one.
 */
export const obfuscateUrlPassword = (value: string): string =>
  value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*:)[^/?#@]*@/i, `$1${OBFUSCATED}@`)

/**
 * The settings report: every key in its JSON form, secrets obfuscated (set → "********", unset →
 * null), and so is the password of any URL a setting holds.
 */
export const settingsReport = (settings: SettingsValue): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const leaf of leaves) {
    let value: unknown = settings
    for (const key of leaf.path) value = (value as Record<string, unknown>)[key]
    const json = leaf.setting.secret
      ? value === null || value === undefined ? null : OBFUSCATED
      : Schema.encodeSync(leaf.setting.schema)(value)
    setIn(out, leaf.path, typeof json === "string" ? obfuscateUrlPassword(json) : json)
  }
  return out
}

/** Settings from the environment (through the current ConfigProvider) and optional overrides. */
export const layer = (overrides: SettingsOverrides = {}): Layer.Layer<Settings, SettingsError> =>
  Layer.effect(Settings, loadSettings(overrides))

