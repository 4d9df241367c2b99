/**
 * GET /ui-settings: what a browser UI asks the server before it starts (where the API is, whether
 * it needs CSRF tokens or credentials, which UIs are served and where). The reference serves it
 * beside its UI, outside the API and without its checks; Baton answers it at the server root, at the
 * API base path's parent (/v2/ui-settings for /v2/api) and below each UI's base.
 */
import { HttpServerResponse } from "@effect/platform"
import { Redacted } from "effect"
import { trimEnd } from "../domain/strings.ts"
import { normalizeBasePath } from "../http/paths.ts"
import type { SettingsValue } from "../settings/settings.ts"
import { normalizeServeBase, type UiBundle } from "./bundle.ts"
import type { UiVersion } from "./discovery.ts"

export interface UiSettings {
  readonly api_url: string
  readonly csrf_enabled: boolean
  readonly auth: string | null
  readonly flags: ReadonlyArray<string>
  readonly default_ui: UiVersion
  readonly available_uis: ReadonlyArray<UiVersion>
  readonly v1_base_url: string | null
  readonly v2_base_url: string | null
}

/**
 * `url` without the credentials of its authority (`https://user:password@host/…` → `https://host/…`):
 * /ui-settings is answered to anyone, and a browser refuses to fetch a URL that carries them anyway.
 * The authority runs to its last `@`, as URL parsers read it.
 */
export const withoutCredentials = (url: string): string => url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, "$1")

/**
 * The UI a browser gets where both could answer (the serve base): the one server.ui.v2_enabled
 * names (v2 when on, v1 otherwise) when it is served, else the one that is.
 */
export const defaultUiOf = (settings: SettingsValue, available: ReadonlyArray<UiVersion>): UiVersion => {
  const configured: UiVersion = settings.server.ui.v2_enabled ? "v2" : "v1"
  return available.length === 0 || available.includes(configured) ? configured : available[0]!
}

/** The answer, in the reference's shape: which UIs are served, and where. */
export const uiSettingsOf = (settings: SettingsValue, bundles: ReadonlyArray<UiBundle>): UiSettings => {
  const ui = settings.server.ui
  const baseOf = (version: UiVersion) => bundles.find((bundle) => bundle.version === version)?.base ?? null
  const available = (["v1", "v2"] as const).filter((version) => baseOf(version) !== null)
  const authString = settings.server.api.auth_string
  return {
    api_url: withoutCredentials(ui.api_url ?? settings.api.url ?? normalizeBasePath(settings.server.api.base_path)),
    csrf_enabled: settings.server.api.csrf_protection_enabled,
    auth: authString !== null && Redacted.value(authString) !== "" ? "BASIC" : null,
    flags: [],
    default_ui: defaultUiOf(settings, available),
    available_uis: available,
    v1_base_url: baseOf("v1"),
    v2_base_url: baseOf("v2")
  }
}

/** The paths /ui-settings answers at (below each UI's base too); none of them inside the API's base path. */
export const uiSettingsPaths = (settings: SettingsValue, bases: ReadonlyArray<string> = []): ReadonlySet<string> => {
  const apiBase = normalizeBasePath(settings.server.api.base_path)
  const serveBase = normalizeServeBase(settings.server.ui.serve_base)
  const parent = apiBase.slice(0, Math.max(0, apiBase.lastIndexOf("/")))
  const prefixes = ["", parent, ...[serveBase, ...bases].map((base) => (base === "/" ? "" : base))]
  const candidates = prefixes.map((prefix) => `${prefix}/ui-settings`)
  return new Set(
    candidates.filter((path) => apiBase === "" || !(path === apiBase || path.startsWith(`${apiBase}/`)))
  )
}

/** The /ui-settings route: the answer is made once, at start, from settings that do not change. */
export const uiSettingsRoute = (settings: SettingsValue, bundles: ReadonlyArray<UiBundle>) => {
  const paths = uiSettingsPaths(settings, bundles.map((bundle) => bundle.base))
  const answer = HttpServerResponse.unsafeJson(uiSettingsOf(settings, bundles))
  const notAllowed = HttpServerResponse.unsafeJson(
    { detail: "Method Not Allowed" },
    { status: 405, headers: { allow: "GET, HEAD" } }
  )
  return {
    paths,
    /** The answer for `pathname` (trailing slash ignored), or undefined when it is no /ui-settings path. */
    answer: (method: string, pathname: string): HttpServerResponse.HttpServerResponse | undefined => {
      const path = pathname.length > 1 && pathname.endsWith("/") ? trimEnd(pathname, "/") : pathname
      if (!paths.has(path)) return undefined
      return method === "GET" || method === "HEAD" ? answer : notAllowed
    }
  }
}
