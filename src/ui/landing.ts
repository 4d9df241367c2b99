/**
 * Baton's own page at the server root when no UI is served: a browser opening the server's address
 * learns what answers there (name, version, where the API is, its docs and health) and how to add a
 * UI, instead of a JSON 404. Only a request that asks for HTML gets it; other clients keep the 404.
 *
 * The page is made once, at start, from settings: every value in it is escaped, links are plain
 * paths, and it carries a Content-Security-Policy that allows nothing but its own style sheet (by
 * hash): no script, no frame, no form.
 */
import { createHash } from "node:crypto"
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { normalizeBasePath } from "../http/paths.ts"
import type { SettingsValue } from "../settings/settings.ts"
import { BATON_VERSION } from "../version.ts"
import { normalizeServeBase } from "./bundle.ts"

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

/** Text as HTML text or a quoted attribute value. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

/**
 * A path as a same-origin link: one leading slash (a link starting `//`, `/\` or with a control
 * character could lead to another host), and characters that have no business in a path encoded.
 * Percent-escapes already there are kept, as the base path is matched against the raw request path.
 */
export const pathHref = (pathname: string): string => {
  const rest = pathname.replace(/^[/\\\u0000-\u0020]+/, "")
  return `/${rest.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@%/]/g, (c) => encodeURIComponent(c))}`
}

const STYLE =
  "body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1f2328}" +
  "h1 small{font-weight:normal;color:#59636e}code{background:#f0f2f4;padding:0 .25rem;border-radius:3px}" +
  "@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}h1 small{color:#9198a1}code{background:#262c36}}"

const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

/** The page: made from settings that do not change, so once. */
export const landingHtml = (settings: SettingsValue): string => {
  const apiBase = normalizeBasePath(settings.server.api.base_path)
  const link = (pathname: string, text: string) => `<a href="${escapeHtml(pathHref(pathname))}">${escapeHtml(text)}</a>`
  const code = (text: string) => `<code>${escapeHtml(text)}</code>`
  return [
    "<!doctype html>",
    `<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<title>Baton ${escapeHtml(BATON_VERSION)}</title><style>${STYLE}</style></head><body><main>`,
    `<h1>Baton <small>${escapeHtml(BATON_VERSION)}</small></h1>`,
    `<p>A workflow orchestration server. Its API is at ${code(apiBase)}: point Prefect clients and workers at it.</p>`,
    "<ul>",
    `<li>${link(`${apiBase}/docs`, "API documentation")}</li>`,
    `<li>${link(`${apiBase}/health`, "Health")}</li>`,
    "</ul>",
    "<h2>No web UI is served</h2>",
    `<p>To add one, install Prefect where Baton runs (${code("pip install prefect")}): Baton serves the UIs it`,
    ` ships with. Or set ${code("server.ui.static_directory")} (${code("BATON_SERVER_UI_STATIC_DIRECTORY")}) to the folder`,
    " of a built UI. Then restart the server: it says at start which UI it serves, and from where.</p>",
    "</main></body></html>",
    ""
  ].join("\n")
}

/** Whether the request's Accept names HTML: a browser loading a page. */
const asksForHtml = (request: HttpServerRequest.HttpServerRequest): boolean =>
  (request.headers["accept"] ?? "").toLowerCase().includes("text/html")

/**
 * The landing page's route: its answer for a GET or HEAD of `/` (or of the serve base) that asks
 * for HTML, or undefined.
 */
export const landingRoute = (settings: SettingsValue) => {
  const serveBase = normalizeServeBase(settings.server.ui.serve_base)
  const paths = new Set(["/", serveBase, `${serveBase === "/" ? "" : serveBase}/`])
  const body = new TextEncoder().encode(landingHtml(settings))
  const headers = {
    "cache-control": "no-cache",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer"
  }
  return (request: HttpServerRequest.HttpServerRequest, pathname: string): HttpServerResponse.HttpServerResponse | undefined => {
    if (request.method !== "GET" && request.method !== "HEAD") return undefined
    if (!paths.has(pathname) || !asksForHtml(request)) return undefined
    return HttpServerResponse.uint8Array(body, { contentType: "text/html; charset=utf-8", headers })
  }
}
